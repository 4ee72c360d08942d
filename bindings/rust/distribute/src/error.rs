//! The one place where a `dist_status_t` becomes an [`Error`].

use std::ffi::CStr;
use std::fmt;

use crate::sys;

/// A status code of the C API (`DIST_*` in status.h), numbered as Abseil's and gRPC's.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Code {
    Cancelled,
    Unknown,
    InvalidArgument,
    DeadlineExceeded,
    NotFound,
    AlreadyExists,
    PermissionDenied,
    ResourceExhausted,
    FailedPrecondition,
    Aborted,
    OutOfRange,
    Unimplemented,
    Internal,
    Unavailable,
    DataLoss,
    Unauthenticated,
    /// A code this binding does not know (a newer library): treated as an error.
    Other(i32),
}

impl Code {
    /// The code for a raw non-OK status.
    pub fn from_raw(status: sys::dist_status_t) -> Code {
        match status {
            sys::DIST_CANCELLED => Code::Cancelled,
            sys::DIST_UNKNOWN => Code::Unknown,
            sys::DIST_INVALID_ARGUMENT => Code::InvalidArgument,
            sys::DIST_DEADLINE_EXCEEDED => Code::DeadlineExceeded,
            sys::DIST_NOT_FOUND => Code::NotFound,
            sys::DIST_ALREADY_EXISTS => Code::AlreadyExists,
            sys::DIST_PERMISSION_DENIED => Code::PermissionDenied,
            sys::DIST_RESOURCE_EXHAUSTED => Code::ResourceExhausted,
            sys::DIST_FAILED_PRECONDITION => Code::FailedPrecondition,
            sys::DIST_ABORTED => Code::Aborted,
            sys::DIST_OUT_OF_RANGE => Code::OutOfRange,
            sys::DIST_UNIMPLEMENTED => Code::Unimplemented,
            sys::DIST_INTERNAL => Code::Internal,
            sys::DIST_UNAVAILABLE => Code::Unavailable,
            sys::DIST_DATA_LOSS => Code::DataLoss,
            sys::DIST_UNAUTHENTICATED => Code::Unauthenticated,
            other => Code::Other(other),
        }
    }

    /// The raw `dist_status_t`.
    pub fn raw(self) -> sys::dist_status_t {
        match self {
            Code::Cancelled => sys::DIST_CANCELLED,
            Code::Unknown => sys::DIST_UNKNOWN,
            Code::InvalidArgument => sys::DIST_INVALID_ARGUMENT,
            Code::DeadlineExceeded => sys::DIST_DEADLINE_EXCEEDED,
            Code::NotFound => sys::DIST_NOT_FOUND,
            Code::AlreadyExists => sys::DIST_ALREADY_EXISTS,
            Code::PermissionDenied => sys::DIST_PERMISSION_DENIED,
            Code::ResourceExhausted => sys::DIST_RESOURCE_EXHAUSTED,
            Code::FailedPrecondition => sys::DIST_FAILED_PRECONDITION,
            Code::Aborted => sys::DIST_ABORTED,
            Code::OutOfRange => sys::DIST_OUT_OF_RANGE,
            Code::Unimplemented => sys::DIST_UNIMPLEMENTED,
            Code::Internal => sys::DIST_INTERNAL,
            Code::Unavailable => sys::DIST_UNAVAILABLE,
            Code::DataLoss => sys::DIST_DATA_LOSS,
            Code::Unauthenticated => sys::DIST_UNAUTHENTICATED,
            Code::Other(c) => c,
        }
    }

    /// The library's name of the code ("INVALID_ARGUMENT", ...): `dist_status_name`.
    pub fn name(self) -> &'static str {
        // SAFETY: dist_status_name returns a static NUL-terminated string.
        unsafe { CStr::from_ptr(sys::dist_status_name(self.raw())) }.to_str().unwrap_or("UNKNOWN_STATUS_CODE")
    }
}

/// A failed call: the status code and the library's message (`dist_last_error_message`, read
/// in the same native call on the same thread), or the message of a Rust callback's error.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error {
    code: Code,
    message: String,
    /// True when the library produced it (`dist_last_error_message`), false when Rust code
    /// did (a callback's own error or a caught panic): used to hand the caller the root cause
    /// of a failed run rather than another replica's consequence of it.
    from_library: bool,
}

impl Error {
    /// An error with a code and message, e.g. to return from a replica function.
    pub fn new(code: Code, message: impl Into<String>) -> Error {
        Error { code, message: message.into(), from_library: false }
    }
    pub fn code(&self) -> Code {
        self.code
    }
    pub fn message(&self) -> &str {
        &self.message
    }
    pub(crate) fn with_message(self, message: String) -> Error {
        Error { message, ..self }
    }
    /// Whether the library reported it (else Rust code: a callback's error or a panic).
    pub fn is_from_library(&self) -> bool {
        self.from_library
    }
    /// The raw status (`dist_status_t`) of the error.
    pub fn status(&self) -> sys::dist_status_t {
        self.code.raw()
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({}): {}", self.code.name(), self.code.raw(), self.message)
    }
}

impl std::error::Error for Error {}

impl Error {
    /// Hands this error to the library as a callback's failure and returns its status: the
    /// message becomes the thread's last error (`dist_set_last_error_message`), which the
    /// library passes on with the status to every caller the failure reaches. Call it on the
    /// callback's thread, as the last thing before returning the status.
    pub(crate) fn report(&self) -> sys::dist_status_t {
        if let Ok(text) = std::ffi::CString::new(self.message.replace('\0', " ")) {
            // SAFETY: a valid NUL-terminated string; the library copies it.
            unsafe { sys::dist_set_last_error_message(text.as_ptr()) };
        }
        self.status()
    }
}

/// The result type of every fallible call.
pub type Result<T> = std::result::Result<T, Error>;

/// Maps a status to `Ok(())` or to an [`Error`] carrying `dist_last_error_message()`. Must be
/// called right after the native call, on the same thread (it always is: every wrapper calls
/// it on the status it just received).
#[inline]
pub(crate) fn check(status: sys::dist_status_t) -> Result<()> {
    if status == sys::DIST_OK {
        Ok(())
    } else {
        Err(last_error(status))
    }
}

#[cold]
pub(crate) fn last_error(status: sys::dist_status_t) -> Error {
    // SAFETY: the message is valid until the next dist_ call on this thread; copied at once.
    let message = unsafe {
        let p = sys::dist_last_error_message();
        if p.is_null() {
            String::new()
        } else {
            CStr::from_ptr(p).to_string_lossy().into_owned()
        }
    };
    Error { code: Code::from_raw(status), message, from_library: true }
}
