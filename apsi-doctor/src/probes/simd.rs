//! Vector instructions. On x86-64 the live machine is asked with CPUID (and
//! XGETBV, so a feature the OS has not enabled is reported absent, as the
//! kernel does in `/proc/cpuinfo`): SSE4.2, AVX2, FMA, AVX-512 F/BF16/FP16,
//! AMX tile/BF16/INT8. On Arm, and with fixture roots, the `flags`/`Features`
//! line of `/proc/cpuinfo` is read: NEON (asimd), SVE, SVE2, SME.

use crate::check::Check;
use crate::env::{field, Env};
use serde_json::{Map, Value};

/// (detail key, label, the word in `/proc/cpuinfo`).
pub type Feature = (&'static str, &'static str, &'static str);

/// x86-64: the `flags` words.
pub const X86: &[Feature] = &[
    ("sse4_2", "SSE4.2", "sse4_2"),
    ("avx2", "AVX2", "avx2"),
    ("fma", "FMA", "fma"),
    ("avx512f", "AVX-512 F", "avx512f"),
    ("avx512_bf16", "AVX-512 BF16", "avx512_bf16"),
    ("avx512_fp16", "AVX-512 FP16", "avx512_fp16"),
    ("amx_tile", "AMX tile", "amx_tile"),
    ("amx_bf16", "AMX BF16", "amx_bf16"),
    ("amx_int8", "AMX INT8", "amx_int8"),
];

/// Arm: the `Features` words.
pub const ARM: &[Feature] = &[
    ("neon", "NEON", "asimd"),
    ("sve", "SVE", "sve"),
    ("sve2", "SVE2", "sve2"),
    ("sme", "SME", "sme"),
];

pub fn probe(env: &Env) -> Check {
    let cpuinfo = env.read(&env.proc("cpuinfo")).unwrap_or_default();
    let (table, have, source): (&[Feature], Vec<bool>, &str) = if env.live && cfg!(target_arch = "x86_64") {
        (X86, X86.iter().map(|(k, _, _)| cpuid_has(k)).collect(), "cpuid")
    } else if let Some(flags) = field(&cpuinfo, "flags") {
        let words: Vec<&str> = flags.split_whitespace().collect();
        (
            X86,
            X86.iter().map(|(_, _, f)| words.contains(f)).collect(),
            "/proc/cpuinfo flags",
        )
    } else if let Some(feats) = field(&cpuinfo, "Features") {
        let words: Vec<&str> = feats.split_whitespace().collect();
        (
            ARM,
            ARM.iter().map(|(_, _, f)| words.contains(f)).collect(),
            "/proc/cpuinfo Features",
        )
    } else {
        return Check::warn("simd", "cannot tell which vector instructions this processor has")
            .fix("doctor reads /proc/cpuinfo for this; check that /proc is mounted");
    };
    let mut features = Map::new();
    let mut yes = Vec::new();
    let mut no = Vec::new();
    for ((key, label, _), h) in table.iter().zip(&have) {
        features.insert(key.to_string(), Value::from(*h));
        if *h {
            yes.push(*label)
        } else {
            no.push(*label)
        }
    }
    let mut summary = if yes.is_empty() {
        "none of the tracked vector extensions".to_string()
    } else {
        yes.join(", ")
    };
    if !no.is_empty() {
        summary.push_str(&format!(" (not: {})", no.join(", ")));
    }
    Check::ok("simd", summary)
        .detail("source", source)
        .detail("features", Value::Object(features))
}

/// Whether the live x86-64 processor has a feature, with the OS's support.
#[cfg(target_arch = "x86_64")]
pub(crate) fn cpuid_has(key: &str) -> bool {
    match key {
        "sse4_2" => std::arch::is_x86_feature_detected!("sse4.2"),
        "avx2" => std::arch::is_x86_feature_detected!("avx2"),
        "fma" => std::arch::is_x86_feature_detected!("fma"),
        "avx512f" => std::arch::is_x86_feature_detected!("avx512f"),
        "avx512_bf16" => std::arch::is_x86_feature_detected!("avx512bf16"),
        "avx512_fp16" => std::arch::is_x86_feature_detected!("avx512fp16"),
        "amx_tile" | "amx_bf16" | "amx_int8" => amx(key),
        _ => false,
    }
}

#[cfg(not(target_arch = "x86_64"))]
pub(crate) fn cpuid_has(_key: &str) -> bool {
    false
}

/// AMX: CPUID leaf 7 EDX bits 24 (tile), 22 (BF16), 25 (INT8), usable only
/// when the OS saves the tile state (XCR0 bits 17 and 18).
#[cfg(target_arch = "x86_64")]
fn amx(key: &str) -> bool {
    use std::arch::x86_64::{__cpuid, __cpuid_count};
    let max_leaf = __cpuid(0).eax;
    if max_leaf < 7 {
        return false;
    }
    let l7 = __cpuid_count(7, 0);
    let bit = match key {
        "amx_tile" => 24,
        "amx_bf16" => 22,
        _ => 25,
    };
    if l7.edx & (1 << bit) == 0 {
        return false;
    }
    if !std::arch::is_x86_feature_detected!("xsave") {
        return false;
    }
    // Leaf 1 ECX bit 27 (OSXSAVE) says XGETBV may be executed.
    let osxsave = __cpuid(1).ecx & (1 << 27) != 0;
    if !osxsave {
        return false;
    }
    // SAFETY: OSXSAVE is set, so XGETBV(0) is allowed.
    let xcr0 = unsafe { xgetbv0() };
    xcr0 & (0b11 << 17) == (0b11 << 17)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "xsave")]
unsafe fn xgetbv0() -> u64 {
    std::arch::x86_64::_xgetbv(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    fn env_with_cpuinfo(text: &str) -> (tempfile::TempDir, Env) {
        let t = tempfile::tempdir().unwrap();
        fs::write(t.path().join("cpuinfo"), text).unwrap();
        let env = Env::system(true).with_roots(Some(t.path().into()), Some(t.path().into()));
        (t, env)
    }

    #[test]
    fn sapphire_rapids_flags_give_avx512_and_amx() {
        let (_t, env) = env_with_cpuinfo(
            "processor\t: 0\nflags\t\t: fpu sse4_2 avx2 fma avx512f avx512_bf16 avx512_fp16 amx_bf16 amx_tile amx_int8\n",
        );
        let c = probe(&env);
        let f = &c.details["features"];
        for k in [
            "sse4_2",
            "avx2",
            "fma",
            "avx512f",
            "avx512_bf16",
            "avx512_fp16",
            "amx_tile",
            "amx_bf16",
            "amx_int8",
        ] {
            assert_eq!(f[k], true, "{k}");
        }
        assert!(
            c.summary.contains("AMX INT8") && !c.summary.contains("not:"),
            "{}",
            c.summary
        );
    }

    #[test]
    fn an_older_x86_lacks_them() {
        let (_t, env) = env_with_cpuinfo("flags\t\t: fpu sse4_2 avx2 fma avx512f\n");
        let c = probe(&env);
        assert_eq!(c.details["features"]["avx512f"], true);
        assert_eq!(c.details["features"]["avx512_bf16"], false);
        assert_eq!(c.details["features"]["amx_tile"], false);
        assert!(
            c.summary.contains("not: AVX-512 BF16, AVX-512 FP16, AMX tile"),
            "{}",
            c.summary
        );
    }

    #[test]
    fn arm_features_give_neon_sve_sme() {
        let (_t, env) = env_with_cpuinfo(
            "processor\t: 0\nFeatures\t: fp asimd evtstrm aes sve sve2 sme\nCPU implementer\t: 0x41\n",
        );
        let c = probe(&env);
        let f = &c.details["features"];
        assert_eq!(
            (f["neon"].clone(), f["sve"].clone(), f["sve2"].clone(), f["sme"].clone()),
            (true.into(), true.into(), true.into(), true.into())
        );
        let (_t, env) = env_with_cpuinfo("Features\t: fp asimd\n");
        assert_eq!(probe(&env).details["features"]["sve"], false);
    }

    #[test]
    fn nothing_to_read_is_a_warning() {
        let (_t, env) = env_with_cpuinfo("");
        assert_eq!(probe(&env).status, crate::Status::Warn);
    }

    /// The live answer (CPUID) agrees with the kernel's flags in the real
    /// `/proc/cpuinfo`, whatever this processor has.
    #[test]
    #[cfg(all(target_arch = "x86_64", target_os = "linux"))]
    fn live_cpuid_matches_proc_cpuinfo() {
        let Ok(text) = fs::read_to_string("/proc/cpuinfo") else {
            return;
        };
        let flags: Vec<&str> = field(&text, "flags").unwrap().split_whitespace().collect();
        let c = probe(&Env::system(true));
        assert_eq!(c.details["source"], "cpuid");
        for (key, _, flag) in X86 {
            assert_eq!(
                c.details["features"][*key],
                flags.contains(flag),
                "{key}: CPUID and /proc/cpuinfo disagree"
            );
        }
    }
}
