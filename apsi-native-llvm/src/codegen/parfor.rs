//! `parallel for`: the call into the host's chunk runner with the
//! captured values and the reductions.

use super::*;

impl<'ctx> Gen<'_, 'ctx> {
    #[allow(clippy::too_many_arguments)]
    pub(super) fn par_for(
        &self,
        st: &FnState<'ctx>,
        f: &Func,
        chunk: u32,
        range: [Var; 3],
        env: &[Var],
        init_first: &[Var],
        init_rest: &[Var],
        first: &[Var],
        rest: Var,
        nrest: Var,
        line: u32,
    ) -> R<()> {
        let i64t = self.ctx.i64_type();
        let i64p = i64t.ptr_type(AddressSpace::default());
        let envp = self.words_array(env.len(), "env")?;
        for (k, v) in env.iter().enumerate() {
            let w = self.to_word(self.load(st, *v)?, f.ty(*v).ok_or("env")?, true)?;
            e(self.b.build_store(self.word_at(envp, k)?, w))?;
        }
        let m = init_first.len();
        let fp = self.words_array(m, "if")?;
        let rp = self.words_array(m, "ir")?;
        for k in 0..m {
            let (a, b) = (init_first[k], init_rest[k]);
            let wa = self.to_word(self.load(st, a)?, f.ty(a).ok_or("init")?, false)?;
            e(self.b.build_store(self.word_at(fp, k)?, wa))?;
            let wb = self.to_word(self.load(st, b)?, f.ty(b).ok_or("init")?, false)?;
            e(self.b.build_store(self.word_at(rp, k)?, wb))?;
        }
        let outp = self.words_array(m, "first")?;
        let restp = e(self.b.build_alloca(i64p, "rest"))?;
        let nrestp = e(self.b.build_alloca(i64t, "nrest"))?;
        let cname = format!("{}$chunk", self.m.funcs.get(chunk as usize).ok_or("chunk")?.name);
        let cf = self.module.get_function(&cname);
        // Chunk trampolines are emitted after every body: declare it now when needed.
        let cf = match cf {
            Some(cf) => cf,
            None => {
                let ft = self.ctx.i32_type().fn_type(
                    &[
                        self.ctxp_ty(),
                        i64t.into(),
                        i64t.into(),
                        i64t.into(),
                        i64p.into(),
                        i64p.into(),
                    ],
                    false,
                );
                self.module.add_function(&cname, ft, Some(Linkage::External))
            }
        };
        let cptr = cf.as_global_value().as_pointer_value();
        let i8p = self.ctx.i8_type().ptr_type(AddressSpace::default());
        let cptr = e(self.b.build_pointer_cast(cptr, i8p, "cp"))?;
        let hf = self.host_fn(
            "apsi_rt_par_for",
            &[
                self.ctxp_ty(),
                i8p.into(),
                i64t.into(),
                i64t.into(),
                i64t.into(),
                i64p.into(),
                i64t.into(),
                i64p.into(),
                i64p.into(),
                i64p.into(),
                i64p.ptr_type(AddressSpace::default()).into(),
                i64p.into(),
                self.ctx.i32_type().into(),
            ],
        );
        let s = self.call(
            hf,
            &[
                st.ctxp.into(),
                cptr.into(),
                self.ival(st, range[0])?.into(),
                self.ival(st, range[1])?.into(),
                self.ival(st, range[2])?.into(),
                envp.into(),
                self.i64c(m as i64).into(),
                fp.into(),
                rp.into(),
                outp.into(),
                restp.into(),
                nrestp.into(),
                self.i32c(line as i64).into(),
            ],
        )?;
        self.check_status(st, s.into_int_value())?;
        for (k, v) in first.iter().enumerate() {
            let w = e(self.b.build_load(self.word_at(outp, k)?, "w"))?.into_int_value();
            let x = self.word_to(w, f.ty(*v).ok_or("first")?)?;
            self.store(st, *v, x)?;
        }
        let rv = e(self.b.build_load(restp, "rest"))?;
        self.store(st, rest, rv)?;
        let nv = e(self.b.build_load(nrestp, "nrest"))?;
        self.store(st, nrest, nv)?;
        Ok(())
    }
}
