//! NVIDIA GPUs. Asked in turn, stopping at the first that knows the devices:
//! 1. the driver library (`libcuda.so.1`: driver version, name, compute
//!    capability, memory, SMs), live machine only;
//! 2. the files the driver writes (`/proc/driver/nvidia/version`,
//!    `/proc/driver/nvidia/gpus/<bus>/information`) and the PCI devices under
//!    `/sys/bus/pci/devices` (which also show a GPU whose driver is missing);
//! 3. `nvidia-smi` (with a time limit), live machine only.
//!
//! No GPU is a warning (the CPU back end needs none); a GPU without a
//! working driver is an error.

use crate::check::Check;
use crate::dl::Library;
use crate::env::{field, Env};
use crate::subprocess::{self, Outcome};
use serde_json::{json, Value};
use std::ffi::{c_char, c_int, c_uint};
use std::time::Duration;

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Gpu {
    pub name: String,
    pub bus: Option<String>,
    pub uuid: Option<String>,
    pub memory_bytes: Option<u64>,
    pub compute_capability: Option<String>,
    pub sms: Option<u32>,
    pub pci_device_id: Option<String>,
}

impl Gpu {
    fn to_json(&self) -> Value {
        json!({
            "name": self.name, "bus": self.bus, "uuid": self.uuid, "memory_bytes": self.memory_bytes,
            "compute_capability": self.compute_capability, "sms": self.sms, "pci_device_id": self.pci_device_id,
        })
    }
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Found {
    pub source: &'static str,
    pub driver_version: Option<String>,
    /// The CUDA version the driver supports (`12.4`).
    pub cuda_version: Option<String>,
    pub gpus: Vec<Gpu>,
}

/// How long `nvidia-smi` may take.
pub const SMI_LIMIT: Duration = Duration::from_secs(5);

pub fn probe(env: &Env) -> Check {
    let mut notes: Vec<String> = Vec::new();
    let lib = if env.live {
        match from_driver_library(env) {
            Ok(f) if !f.gpus.is_empty() => return report(f, notes),
            Ok(f) => {
                notes.push("the driver library loaded but reports no devices".into());
                Some(f)
            }
            Err(e) => {
                notes.push(format!("driver library: {e}"));
                None
            }
        }
    } else {
        None
    };
    let fs = from_files(env);
    if !fs.gpus.is_empty() && fs.driver_version.is_some() {
        let mut f = fs;
        if env.live && subprocess::on_path("nvidia-smi") {
            if let Ok(smi) = from_smi() {
                merge(&mut f, &smi);
            }
        }
        if f.cuda_version.is_none() {
            f.cuda_version = lib.and_then(|l| l.cuda_version);
        }
        return report(f, notes);
    }
    if env.live && subprocess::on_path("nvidia-smi") {
        match from_smi() {
            Ok(f) if !f.gpus.is_empty() => return report(f, notes),
            Ok(_) => notes.push("nvidia-smi lists no GPU".into()),
            Err(e) => notes.push(format!("nvidia-smi: {e}")),
        }
    }
    if !fs.gpus.is_empty() {
        // PCI shows NVIDIA hardware, but no driver answers for it.
        let buses: Vec<String> = fs.gpus.iter().filter_map(|g| g.bus.clone()).collect();
        return Check::error("gpu", format!("{} NVIDIA GPU(s) at {} but no NVIDIA driver is loaded", fs.gpus.len(), buses.join(", ")))
            .detail("source", "sysfs")
            .detail("driver_version", Value::Null)
            .detail("gpus", Value::Array(fs.gpus.iter().map(Gpu::to_json).collect()))
            .detail("notes", notes)
            .fix("install the NVIDIA driver for this GPU (Debian/Ubuntu: the nvidia-driver package, or NVIDIA's installer) and load it (`modprobe nvidia` or reboot); `backend=\"gpu\"` needs it");
    }
    Check::warn("gpu", "no NVIDIA GPU found: GPU work runs on the CPU back end")
        .detail("source", Value::Null)
        .detail("driver_version", fs.driver_version)
        .detail("gpus", Value::Array(Vec::new()))
        .detail("notes", notes)
        .fix("nothing to do unless you want `backend=\"gpu\"`: that needs an NVIDIA GPU with its driver installed, then `apsi pkg install gpu`")
}

fn report(f: Found, notes: Vec<String>) -> Check {
    let names: Vec<String> = f
        .gpus
        .iter()
        .map(|g| {
            let mut s = g.name.clone();
            let mut extra = Vec::new();
            if let Some(cc) = &g.compute_capability {
                extra.push(format!("sm_{}", cc.replace('.', "")));
            }
            if let Some(m) = g.memory_bytes {
                extra.push(crate::fmt::bytes(m));
            }
            if let Some(n) = g.sms {
                extra.push(format!("{n} SMs"));
            }
            if !extra.is_empty() {
                s.push_str(&format!(" ({})", extra.join(", ")));
            }
            s
        })
        .collect();
    // Identical GPUs once, with a count: "2× NVIDIA H100 80GB HBM3".
    let mut groups: Vec<(String, usize)> = Vec::new();
    for n in names {
        match groups.iter_mut().find(|g| g.0 == n) {
            Some(g) => g.1 += 1,
            None => groups.push((n, 1)),
        }
    }
    let mut summary = groups
        .iter()
        .map(|(n, k)| if *k > 1 { format!("{k}× {n}") } else { n.clone() })
        .collect::<Vec<_>>()
        .join("; ");
    if let Some(d) = &f.driver_version {
        summary.push_str(&format!(", driver {d}"));
    }
    if let Some(c) = &f.cuda_version {
        summary.push_str(&format!(", CUDA {c}"));
    }
    Check::ok("gpu", summary)
        .detail("source", f.source)
        .detail("driver_version", f.driver_version)
        .detail("cuda_version", f.cuda_version)
        .detail("gpus", Value::Array(f.gpus.iter().map(Gpu::to_json).collect()))
        .detail("notes", notes)
}

// ---- 1. the driver library ----

type CuInit = unsafe extern "C" fn(c_uint) -> c_int;
type CuInt = unsafe extern "C" fn(*mut c_int) -> c_int;
type CuDeviceGet = unsafe extern "C" fn(*mut c_int, c_int) -> c_int;
type CuDeviceGetName = unsafe extern "C" fn(*mut c_char, c_int, c_int) -> c_int;
type CuDeviceTotalMem = unsafe extern "C" fn(*mut usize, c_int) -> c_int;
type CuDeviceGetAttribute = unsafe extern "C" fn(*mut c_int, c_int, c_int) -> c_int;
type CuDeviceGetPciBusId = unsafe extern "C" fn(*mut c_char, c_int, c_int) -> c_int;

const ATTR_SMS: c_int = 16;
const ATTR_CC_MAJOR: c_int = 75;
const ATTR_CC_MINOR: c_int = 76;
const CUDA_ERROR_NO_DEVICE: c_int = 100;

/// Asks `libcuda.so.1`. `Err` says why it could not.
pub fn from_driver_library(env: &Env) -> Result<Found, String> {
    let lib = Library::open("libcuda.so.1").map_err(|e| format!("not loadable ({e})"))?;
    let sym = |n: &str| lib.symbol(n).ok_or_else(|| format!("libcuda.so.1 has no {n}"));
    // SAFETY: each symbol has the documented CUDA driver API signature named by its type.
    unsafe {
        let init: CuInit = std::mem::transmute(sym("cuInit")?);
        let rc = init(0);
        if rc == CUDA_ERROR_NO_DEVICE {
            return Ok(Found {
                source: "driver library",
                ..Found::default()
            });
        }
        if rc != 0 {
            return Err(format!("cuInit failed with CUDA error {rc}"));
        }
        let version: CuInt = std::mem::transmute(sym("cuDriverGetVersion")?);
        let count: CuInt = std::mem::transmute(sym("cuDeviceGetCount")?);
        let get: CuDeviceGet = std::mem::transmute(sym("cuDeviceGet")?);
        let name: CuDeviceGetName = std::mem::transmute(sym("cuDeviceGetName")?);
        let mem: Option<CuDeviceTotalMem> = lib.symbol("cuDeviceTotalMem_v2").map(|p| std::mem::transmute(p));
        let attr: CuDeviceGetAttribute = std::mem::transmute(sym("cuDeviceGetAttribute")?);
        let bus: Option<CuDeviceGetPciBusId> = lib.symbol("cuDeviceGetPCIBusId").map(|p| std::mem::transmute(p));
        let mut v: c_int = 0;
        let cuda_version = (version(&mut v) == 0).then(|| format!("{}.{}", v / 1000, (v % 1000) / 10));
        let mut n: c_int = 0;
        if count(&mut n) != 0 {
            return Err("cuDeviceGetCount failed".into());
        }
        let mut gpus = Vec::new();
        for i in 0..n.clamp(0, 64) {
            let mut dev: c_int = 0;
            if get(&mut dev, i) != 0 {
                continue;
            }
            let mut buf = [0 as c_char; 256];
            let nm = if name(buf.as_mut_ptr(), buf.len() as c_int, dev) == 0 {
                c_text(&buf)
            } else {
                format!("GPU {i}")
            };
            let at = |a: c_int| {
                let mut x: c_int = 0;
                (attr(&mut x, a, dev) == 0).then_some(x)
            };
            let mut total: usize = 0;
            let memory_bytes = mem.and_then(|f| (f(&mut total, dev) == 0).then_some(total as u64));
            let mut bbuf = [0 as c_char; 64];
            let bus = bus.and_then(|f| (f(bbuf.as_mut_ptr(), bbuf.len() as c_int, dev) == 0).then(|| c_text(&bbuf)));
            gpus.push(Gpu {
                name: nm,
                bus,
                memory_bytes,
                compute_capability: at(ATTR_CC_MAJOR)
                    .zip(at(ATTR_CC_MINOR))
                    .map(|(a, b)| format!("{a}.{b}")),
                sms: at(ATTR_SMS).and_then(|s| u32::try_from(s).ok()),
                ..Gpu::default()
            });
        }
        // The kernel module's version is not in the driver API; the file has it.
        let driver_version = env
            .read(&env.proc("driver/nvidia/version"))
            .and_then(|t| nvrm_version(&t));
        Ok(Found {
            source: "driver library",
            driver_version,
            cuda_version,
            gpus,
        })
    }
}

fn c_text(buf: &[c_char]) -> String {
    let bytes: Vec<u8> = buf.iter().take_while(|c| **c != 0).map(|c| *c as u8).collect();
    String::from_utf8_lossy(&bytes).trim().to_string()
}

// ---- 2. /proc and /sys ----

/// The version on the driver's `NVRM version:` line.
pub fn nvrm_version(text: &str) -> Option<String> {
    let line = text.lines().find(|l| l.starts_with("NVRM version:"))?;
    line.split_whitespace()
        .find(|w| {
            let parts: Vec<&str> = w.split('.').collect();
            parts.len() >= 2
                && parts
                    .iter()
                    .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
        })
        .map(str::to_string)
}

/// What `/proc/driver/nvidia` and `/sys/bus/pci/devices` say.
pub fn from_files(env: &Env) -> Found {
    let driver_version = env
        .read(&env.proc("driver/nvidia/version"))
        .and_then(|t| nvrm_version(&t))
        .or_else(|| {
            env.read(&env.sys("module/nvidia/version"))
                .map(|s| s.trim().to_string())
                .filter(|s| !s.is_empty())
        });
    let mut gpus: Vec<Gpu> = Vec::new();
    if let Ok(rd) = std::fs::read_dir(env.proc("driver/nvidia/gpus")) {
        let mut dirs: Vec<_> = rd.flatten().map(|e| e.path()).collect();
        dirs.sort();
        for d in dirs {
            let Some(info) = env.read(&d.join("information")) else {
                continue;
            };
            let bus = field(&info, "Bus Location")
                .map(str::to_string)
                .or_else(|| d.file_name().map(|n| n.to_string_lossy().into_owned()));
            gpus.push(Gpu {
                name: field(&info, "Model").unwrap_or("NVIDIA GPU").to_string(),
                uuid: field(&info, "GPU UUID").map(str::to_string),
                bus,
                ..Gpu::default()
            });
        }
    }
    // PCI: every NVIDIA (0x10de) display controller (class 0x03xxxx).
    if let Ok(rd) = std::fs::read_dir(env.sys("bus/pci/devices")) {
        let mut devs: Vec<_> = rd.flatten().map(|e| e.path()).collect();
        devs.sort();
        for d in devs {
            let vendor = env.read(&d.join("vendor")).map(|s| s.trim().to_lowercase());
            let class = env.read(&d.join("class")).map(|s| s.trim().to_lowercase());
            if vendor.as_deref() != Some("0x10de") || !class.as_deref().is_some_and(|c| c.starts_with("0x03")) {
                continue;
            }
            let bus = d.file_name().map(|n| n.to_string_lossy().into_owned());
            let device = env.read(&d.join("device")).map(|s| s.trim().to_lowercase());
            match gpus.iter_mut().find(|g| same_bus(g.bus.as_deref(), bus.as_deref())) {
                Some(g) => g.pci_device_id = device,
                None => gpus.push(Gpu {
                    name: format!("NVIDIA GPU (PCI device {})", device.as_deref().unwrap_or("?")),
                    bus,
                    pci_device_id: device,
                    ..Gpu::default()
                }),
            }
        }
    }
    Found {
        source: "/proc/driver/nvidia",
        driver_version,
        cuda_version: None,
        gpus,
    }
}

/// PCI addresses compared without the domain's width (`00000000:01:00.0` = `0000:01:00.0`).
fn same_bus(a: Option<&str>, b: Option<&str>) -> bool {
    fn norm(s: &str) -> String {
        let s = s.trim().to_lowercase();
        match s.split_once(':') {
            Some((dom, rest)) => format!("{}:{rest}", dom.trim_start_matches('0')),
            None => s,
        }
    }
    matches!((a, b), (Some(a), Some(b)) if norm(a) == norm(b))
}

// ---- 3. nvidia-smi ----

fn from_smi() -> Result<Found, String> {
    let args = [
        "--query-gpu=name,driver_version,memory.total,compute_cap,pci.bus_id,uuid",
        "--format=csv,noheader,nounits",
    ];
    match subprocess::run("nvidia-smi", &args, SMI_LIMIT) {
        Outcome::Done {
            code: Some(0), stdout, ..
        } => Ok(parse_smi(&stdout)),
        Outcome::Done { code, stderr, .. } => Err(format!(
            "exited with {} ({})",
            code.map_or("a signal".into(), |c| c.to_string()),
            stderr.trim()
        )),
        Outcome::NotStarted(e) => Err(format!("cannot run it: {e}")),
        Outcome::TimedOut => Err(format!("no answer within {} s", SMI_LIMIT.as_secs())),
    }
}

/// `name, driver, memory MiB, compute capability, bus id, uuid` per line.
pub fn parse_smi(text: &str) -> Found {
    let mut f = Found {
        source: "nvidia-smi",
        ..Found::default()
    };
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let cols: Vec<&str> = line.split(',').map(str::trim).collect();
        let col = |i: usize| {
            cols.get(i)
                .copied()
                .filter(|s| !s.is_empty() && *s != "[N/A]" && *s != "N/A")
        };
        if f.driver_version.is_none() {
            f.driver_version = col(1).map(str::to_string);
        }
        f.gpus.push(Gpu {
            name: col(0).unwrap_or("NVIDIA GPU").to_string(),
            memory_bytes: col(2)
                .and_then(|m| m.parse::<u64>().ok())
                .map(|m| m.saturating_mul(1 << 20)),
            compute_capability: col(3).map(str::to_string),
            bus: col(4).map(str::to_string),
            uuid: col(5).map(str::to_string),
            ..Gpu::default()
        });
    }
    f
}

/// Fills what the files lack from `nvidia-smi`, matching GPUs by bus.
fn merge(f: &mut Found, smi: &Found) {
    for g in &mut f.gpus {
        if let Some(s) = smi.gpus.iter().find(|s| same_bus(s.bus.as_deref(), g.bus.as_deref())) {
            g.memory_bytes = g.memory_bytes.or(s.memory_bytes);
            g.compute_capability = g.compute_capability.clone().or(s.compute_capability.clone());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nvrm_lines_of_both_kernel_modules() {
        assert_eq!(
            nvrm_version("NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue Mar  5 22:23:56 UTC 2024\nGCC version:  gcc version 12.2.0 (Debian 12.2.0-14)\n").as_deref(),
            Some("550.54.15")
        );
        assert_eq!(
            nvrm_version("NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  560.35.03  Release Build  (dvs-builder@U16-I3-B03-4-3)  Fri Aug 16 21:42:42 UTC 2024\n").as_deref(),
            Some("560.35.03")
        );
        assert_eq!(nvrm_version("GCC version: 12.2\n"), None);
    }

    #[test]
    fn smi_csv_is_parsed() {
        let f = parse_smi("NVIDIA H100 80GB HBM3, 550.54.15, 81559, 9.0, 00000000:18:00.0, GPU-0f1e2d3c-4b5a-6978-8a9b-0c1d2e3f4a5b\n");
        assert_eq!(f.driver_version.as_deref(), Some("550.54.15"));
        let g = &f.gpus[0];
        assert_eq!(g.name, "NVIDIA H100 80GB HBM3");
        assert_eq!(g.memory_bytes, Some(81559 << 20));
        assert_eq!(g.compute_capability.as_deref(), Some("9.0"));
        assert!(same_bus(g.bus.as_deref(), Some("0000:18:00.0")));
        assert!(!same_bus(g.bus.as_deref(), Some("0000:19:00.0")));
    }

    #[test]
    fn an_empty_machine_is_a_warning_not_a_crash() {
        let t = tempfile::tempdir().unwrap();
        let env = Env::system(true).with_roots(Some(t.path().join("proc")), Some(t.path().join("sys")));
        let c = probe(&env);
        assert_eq!(c.status, crate::Status::Warn);
        assert!(c.fix.is_some());
        assert_eq!(c.details["gpus"], json!([]));
    }

    /// On the live machine the probe never panics, GPU or not.
    #[test]
    fn the_live_probe_answers() {
        let c = probe(&Env::system(true));
        assert!(matches!(
            c.status,
            crate::Status::Ok | crate::Status::Warn | crate::Status::Error
        ));
        assert_eq!(c.id, "gpu");
    }
}
