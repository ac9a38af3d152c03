//! `parallel for` inside a native function: the chunk function, the
//! captured values and the reductions.

use super::*;

impl FnLower<'_> {
    pub(super) fn par_for(&mut self, st: &mut [T], a: usize, n: usize) -> R<()> {
        let (ft, _) = self.get(st, a)?;
        let T::Chunk(p) = ft else {
            return Err(self.bad("a parallel for without its body"));
        };
        let proto = self
            .code
            .protos
            .get(p as usize)
            .map(|p| p.get().clone())
            .ok_or_else(|| self.bad("a missing parallel for body"))?;
        // Captured cells of the body, typed as they are here.
        let mut free_t = Vec::new();
        let mut env = Vec::new();
        for cap in proto.captures.iter() {
            let Capture::Cell(c) = cap else {
                return Err(self.bad("a parallel for inside a parallel for body capturing outer variables"));
            };
            let idx = self.code.nregs as usize + *c as usize;
            let t = st.get(idx).cloned().unwrap_or(T::Undef);
            let t = if matches!(t, T::Undef) { T::None } else { t };
            if matches!(t, T::Conflict) {
                return Err(self.bad("a variable used in parallel for whose type differs between paths"));
            }
            env.extend(self.slots(idx, &t));
            free_t.push(t);
        }
        let lo = self.scalar_as(st, a + 1, &T::Int)?;
        let hi = self.scalar_as(st, a + 2, &T::Int)?;
        let step = self.scalar_as(st, a + 3, &T::Int)?;
        let mut reds = Vec::new();
        let mut init_first = Vec::new();
        let mut init_rest = Vec::new();
        for j in 0..n {
            let (t, _) = self.get(st, a + 4 + 2 * j)?;
            if !t.is_num() {
                return Err(self.bad(format!("a reduction over {}", t.describe())));
            }
            init_first.push(self.scalar_as(st, a + 4 + 2 * j, &t)?);
            init_rest.push(self.scalar_as(st, a + 5 + 2 * j, &t)?);
            reds.push(t);
        }
        let (chunk, outs) = self.s.chunk(&proto, &reds, &free_t)?;
        if outs != reds {
            return Err(
                self.bad("a reduction whose type changes inside parallel for (start it as 0.0 for a float sum)")
            );
        }
        let first: Vec<Var> = reds.iter().map(|t| self.new_var(t.leaf_types()[0])).collect();
        let rest = self.new_var(Ty::Ptr);
        let nrest = self.new_var(Ty::Int);
        let line = self.line();
        self.push(Op::ParFor {
            chunk,
            lo,
            hi,
            step,
            env,
            init_first,
            init_rest,
            first: first.clone(),
            rest,
            nrest,
            line,
        });
        let tup = T::Tuple(reds.clone());
        if n == 0 {
            self.set(st, a, T::None, &[]);
        } else {
            self.set(st, a, tup, &first);
        }
        self.set(st, a + 1, T::Partials(reds), &[rest, nrest]);
        Ok(())
    }
}
