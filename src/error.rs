//! The crate's single error type.

use std::borrow::Cow;

use thiserror::Error as ThisError;

/// A matrix shape, `(rows, columns)`.
pub type Shape = (usize, usize);

/// Everything that can go wrong in polymat.
///
/// Every variant names what was wrong and with which kinds or shapes, so the message alone is
/// enough to find the faulty call. New variants may be added in minor releases.
///
/// # Examples
///
/// ```
/// use polymat::{Dense, Error, Out};
///
/// let a = Dense::zeros(2, 3).into();
/// let b = Dense::zeros(3, 3).into();
/// let err = polymat::add(&a, &b, Out::Auto).unwrap_err();
/// assert!(matches!(err, Error::Shape { .. }));
/// assert_eq!(
///     err.to_string(),
///     "add: incompatible shapes (2, 3) and (3, 3): operands must have the same shape"
/// );
/// ```
#[derive(Debug, Clone, PartialEq, ThisError)]
#[non_exhaustive]
pub enum Error {
    /// The operands of an operation have shapes it cannot combine.
    #[error("{op}: incompatible shape{} {}: {requirement}", if shapes.len() == 1 { "" } else { "s" }, fmt_shapes(shapes))]
    Shape {
        /// The operation.
        op: String,
        /// The shapes of the operands, in argument order.
        shapes: Vec<Shape>,
        /// What the operation requires.
        requirement: Cow<'static, str>,
    },
    /// Raw CSR arrays (or triplets) that do not describe a matrix.
    #[error("invalid CSR data for a {}×{} matrix: {reason}", shape.0, shape.1)]
    InvalidCsr {
        /// The shape the arrays were meant to describe.
        shape: Shape,
        /// What is wrong with them.
        reason: String,
    },
    /// Dense input that does not describe a matrix (for example ragged rows).
    #[error("invalid dense data: {reason}")]
    InvalidDense {
        /// What is wrong with it.
        reason: String,
    },
    /// A name that is not the name or alias of any registered storage kind.
    #[error("unknown storage kind {name:?}; known kinds: {}", known.join(", "))]
    UnknownKind {
        /// The name that was given.
        name: String,
        /// The names of the registered kinds.
        known: Vec<String>,
    },
    /// A Rust type used as storage before it was registered.
    #[error(
        "type {type_name} is not a registered storage type; register it with ConversionRegistry::register_type first"
    )]
    UnregisteredType {
        /// The Rust type name.
        type_name: &'static str,
    },
    /// A storage type, name or alias registered twice.
    #[error("cannot register storage kind {name:?}: {reason}")]
    DuplicateKind {
        /// The name being registered.
        name: String,
        /// What it clashes with.
        reason: String,
    },
    /// A conversion weight that is not finite, positive and at most
    /// [`MAX_WEIGHT`](crate::convert::MAX_WEIGHT).
    #[error("conversion {from} -> {to}: weight must be finite, > 0 and <= 1e6, got {weight}")]
    InvalidWeight {
        /// Source kind.
        from: String,
        /// Target kind.
        to: String,
        /// The rejected weight.
        weight: f64,
    },
    /// No chain of registered conversions leads from one kind to the other.
    #[error("no conversion from {from} to {to}")]
    NoConversion {
        /// Source kind.
        from: String,
        /// Target kind.
        to: String,
    },
    /// A converter returned a value of another kind than it was registered for.
    #[error("converter {from} -> {to} returned a {got}")]
    ConverterOutput {
        /// Source kind.
        from: String,
        /// Target kind the converter was registered for.
        to: String,
        /// Kind it actually returned.
        got: String,
    },
    /// A converter returned a value of another shape than it was given.
    #[error("converter {from} -> {to} returned a {}×{} matrix for a {}×{} input", got.0, got.1, expected.0, expected.1)]
    ConverterShape {
        /// Source kind.
        from: String,
        /// Target kind.
        to: String,
        /// The input's shape.
        expected: Shape,
        /// The shape returned.
        got: Shape,
    },
    /// A step of a multi-step conversion failed; the chain and the failing step are named.
    #[error("conversion {} failed at {from} -> {to}: {reason}", chain.join(" -> "))]
    ConversionFailed {
        /// The kinds of the whole chain, source first.
        chain: Vec<String>,
        /// Source kind of the failing step.
        from: String,
        /// Target kind of the failing step.
        to: String,
        /// What the step reported.
        reason: Box<Error>,
    },
    /// A converter re-entered the conversion it serves (it converted its own input to its own
    /// target kind again), which would recurse forever.
    #[error("converter {from} -> {to} re-entered its own conversion")]
    ReentrantConversion {
        /// Source kind.
        from: String,
        /// Target kind.
        to: String,
    },
    /// An implicit conversion that the conversion policy forbids
    /// ([`ImplicitConversions::Deny`](crate::ImplicitConversions::Deny)).
    #[error("{op}({}) -> {out}: implicit conversion forbidden by the conversion policy: {}", inputs.join(", "), chains.join("; "))]
    ConversionDenied {
        /// The operation.
        op: String,
        /// The input kinds.
        inputs: Vec<String>,
        /// The requested output.
        out: String,
        /// The conversions that would have run, e.g. `"input 1: Dense -> Csr"`.
        chains: Vec<String>,
    },
    /// A value that the target kind cannot represent (a lossy conversion refused).
    #[error("cannot represent {what} as {kind}: {reason}")]
    Unrepresentable {
        /// The target kind.
        kind: String,
        /// What was being converted, e.g. `"Dense(3×3)"`.
        what: String,
        /// Why it does not fit.
        reason: String,
    },
    /// No specialisation of an operation can serve these input kinds and output.
    #[error("{op}: no specialisation for inputs ({}) -> {out}", inputs.join(", "))]
    NoSpecialisation {
        /// The operation.
        op: String,
        /// The input kinds.
        inputs: Vec<String>,
        /// The requested output.
        out: String,
    },
    /// A dispatcher was called with the wrong number of inputs.
    #[error("{op}: expected {expected} input(s), got {got}")]
    Arity {
        /// The operation.
        op: String,
        /// Inputs it takes.
        expected: usize,
        /// Inputs it was given.
        got: usize,
    },
    /// An output kind was requested from an operation whose result is not a matrix.
    #[error("{op}: returns a scalar, so the output kind cannot be chosen (got {out})")]
    OutputNotDispatched {
        /// The operation.
        op: String,
        /// The output that was requested.
        out: String,
    },
    /// A specialisation whose arity or types do not fit its dispatcher.
    #[error("{op}: invalid specialisation {name}: {reason}")]
    InvalidSpecialisation {
        /// The operation.
        op: String,
        /// The specialisation's name.
        name: String,
        /// What does not fit.
        reason: String,
    },
    /// A parameter outside the operation's domain.
    #[error("{op}: invalid argument: {reason}")]
    InvalidArgument {
        /// The operation.
        op: String,
        /// What is wrong.
        reason: String,
    },
    /// A numerical algorithm failed (an SVD or eigensolver did not converge, a matrix is
    /// singular).
    #[error("{op}: numerical failure: {reason}")]
    Numerical {
        /// The operation.
        op: String,
        /// What failed.
        reason: String,
    },
    /// A long computation was stopped by its observer
    /// ([`Watch::observe`](crate::ops::Watch::observe)); the best result it reached is in the
    /// [`Watch`](crate::ops::Watch) ([`stopped`](crate::ops::Watch::stopped)).
    #[error("{op}: {reason}")]
    Stopped {
        /// The operation.
        op: String,
        /// Restarts (`eigs`) or iterations (solvers) done.
        iterations: usize,
        /// What it had reached.
        reason: String,
    },
    /// A result that is too large to allocate: a dense matrix over the dense limit
    /// ([`set_dense_limit`](crate::set_dense_limit)), or an allocation the system refused.
    /// Sparse operands are never densified past the limit: this error is returned instead.
    #[error("{op}: a {}×{} result needs {bytes} bytes{}", shape.0, shape.1, too_large_reason(*limit, reason))]
    TooLarge {
        /// The operation or conversion.
        op: String,
        /// The shape of the result that could not be allocated.
        shape: Shape,
        /// Bytes it would need (`u128`: the product never overflows).
        bytes: u128,
        /// The dense limit in force, for dense results; `None` when the allocator refused.
        limit: Option<usize>,
        /// Why it failed, beyond the size.
        reason: String,
    },
    /// A GPU was needed but none can be used: polymat was built without the `cuda` feature,
    /// the CUDA driver or libraries are missing, or no device is present.
    #[error("no usable CUDA GPU: {reason}")]
    NoGpu {
        /// Why no GPU can be used.
        reason: String,
    },
    /// A CUDA driver, cuBLAS or NVRTC call failed (out of device memory, a launch failure, a
    /// matrix too large for cuBLAS's 32-bit dimensions).
    #[error("{op}: GPU error: {reason}")]
    Gpu {
        /// The operation or step that failed.
        op: String,
        /// The error reported by CUDA, or what does not fit.
        reason: String,
    },
    /// Reading or writing a file or stream failed ([`io`](crate::io)).
    #[error("{op}: {path}: {message}")]
    Io {
        /// The function, e.g. `read_matrix_market`.
        op: String,
        /// The file, or `<stream>` for a reader or writer.
        path: String,
        /// The kind of I/O error.
        kind: std::io::ErrorKind,
        /// The system's message.
        message: String,
    },
    /// A file or serialised value is not valid in its format ([`io`](crate::io), serde).
    #[error("{format}{}: {reason}", line.map(|l| format!(", line {l}")).unwrap_or_default())]
    Format {
        /// The format: `Matrix Market`, `npy`, `serde`.
        format: &'static str,
        /// The 1-based line where the problem was found, for text formats.
        line: Option<usize>,
        /// What is wrong.
        reason: String,
    },
    /// A kernel received a value of a type other than the one it was registered for.
    ///
    /// This indicates a bug in a user-registered kernel or converter, never bad matrix input.
    #[error("{op}: kernel {kernel} expected a {expected}, got a {got}")]
    KernelType {
        /// The operation.
        op: String,
        /// The kernel's name.
        kernel: String,
        /// The type it expected.
        expected: &'static str,
        /// The kind it was given.
        got: String,
    },
    /// A kernel panicked during a call on distributed data (feature `mpi`). The dispatcher
    /// catches it there so that every rank returns an error instead of one rank unwinding
    /// while the others wait for it in the next collective.
    #[error("{op}: the kernel {kernel} panicked: {message}")]
    KernelPanicked {
        /// The operation.
        op: String,
        /// The kernel's name.
        kernel: String,
        /// The panic's message.
        message: String,
    },
    /// A call on distributed data failed on another rank, the ranks disagreed on the shapes
    /// of a collective call, or an MPI call returned an error (feature `mpi`). Every rank of
    /// the call returns an error: the rank that failed its own, the others this one.
    #[error("{op}: {reason} (rank {rank})")]
    Distributed {
        /// The operation.
        op: String,
        /// The rank that failed first, or this rank for an MPI error or a disagreement.
        rank: usize,
        /// What failed.
        reason: String,
    },
}

/// Result type of every fallible polymat function.
pub type Result<T, E = Error> = std::result::Result<T, E>;

fn too_large_reason(limit: Option<usize>, reason: &str) -> String {
    match limit {
        Some(l) => format!(
            ", over the dense limit of {l} bytes (raise it with polymat::set_dense_limit){}",
            if reason.is_empty() {
                String::new()
            } else {
                format!(": {reason}")
            }
        ),
        None => format!(": {reason}"),
    }
}

fn fmt_shapes(shapes: &[Shape]) -> String {
    shapes
        .iter()
        .map(|(r, c)| format!("({r}, {c})"))
        .collect::<Vec<_>>()
        .join(" and ")
}

impl Error {
    /// Shorthand for [`Error::Shape`].
    pub(crate) fn shape(
        op: &str,
        shapes: &[Shape],
        requirement: impl Into<Cow<'static, str>>,
    ) -> Self {
        Error::Shape {
            op: op.to_owned(),
            shapes: shapes.to_vec(),
            requirement: requirement.into(),
        }
    }

    /// Shorthand for [`Error::InvalidArgument`].
    pub(crate) fn argument(op: &str, reason: impl Into<String>) -> Self {
        Error::InvalidArgument {
            op: op.to_owned(),
            reason: reason.into(),
        }
    }
}
