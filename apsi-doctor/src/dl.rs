//! Loading a shared library to ask it something (the NVIDIA driver, BLAS,
//! the LLVM back end), without linking it: a missing library is an answer,
//! never a crash. Libraries are never unloaded (some, like LLVM, do not
//! survive `dlclose`); doctor is a short-lived process.

use std::ffi::{c_void, CStr, CString};

pub struct Library {
    handle: *mut c_void,
}

// SAFETY: a dlopen handle may be used from any thread.
unsafe impl Send for Library {}

impl Library {
    /// `dlopen(name, RTLD_NOW | RTLD_LOCAL)`; the error is `dlerror()`'s text.
    pub fn open(name: &str) -> Result<Library, String> {
        let c = CString::new(name).map_err(|_| format!("'{name}': a library name cannot hold a NUL byte"))?;
        // SAFETY: `c` is a valid C string; loading runs the library's initialisers, which is the point.
        let handle = unsafe { libc::dlopen(c.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
        if handle.is_null() {
            return Err(last_error().unwrap_or_else(|| format!("cannot load {name}")));
        }
        Ok(Library { handle })
    }

    /// The address of `symbol` (searched in the library and what it loaded), or `None`.
    pub fn symbol(&self, symbol: &str) -> Option<*mut c_void> {
        let c = CString::new(symbol).ok()?;
        // SAFETY: the handle is live (never closed) and `c` is a valid C string.
        let p = unsafe { libc::dlsym(self.handle, c.as_ptr()) };
        (!p.is_null()).then_some(p)
    }
}

/// The file a loaded symbol lives in (`dladdr`).
pub fn file_of(addr: *mut c_void) -> Option<String> {
    // SAFETY: an all-zero Dl_info is a valid value to be filled in.
    let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
    // SAFETY: dladdr only reads the address and fills `info`.
    let ok = unsafe { libc::dladdr(addr as *const c_void, &mut info) };
    if ok == 0 || info.dli_fname.is_null() {
        return None;
    }
    // SAFETY: dli_fname is a NUL-terminated string owned by the loader.
    Some(unsafe { CStr::from_ptr(info.dli_fname) }.to_string_lossy().into_owned())
}

fn last_error() -> Option<String> {
    // SAFETY: dlerror returns NULL or a NUL-terminated thread-local string.
    let e = unsafe { libc::dlerror() };
    (!e.is_null()).then(|| unsafe { CStr::from_ptr(e) }.to_string_lossy().into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_library_is_an_error_not_a_crash() {
        let e = Library::open("libapsi-no-such-library.so.9").err().unwrap();
        assert!(e.contains("libapsi-no-such-library"), "{e}");
        assert!(Library::open("a\0b").is_err());
    }

    #[test]
    fn libc_symbols_are_found_and_located() {
        let lib = Library::open("libc.so.6").unwrap();
        let p = lib.symbol("getpid").unwrap();
        assert!(file_of(p).unwrap().contains("libc"));
        assert!(lib.symbol("apsi_no_such_symbol").is_none());
    }
}
