//! `target_mode_matmul`: an operator applied to some subsystems of a state (QuTiP's
//! `target_mode_matmul` / `local_matmul`), without forming the operator on the whole space.

use std::sync::LazyLock;

use super::plan::Plan;
use crate::dispatch::{Dispatcher, Out};
use crate::error::{Error, Result};
use crate::scalar::c64;
use crate::storage::csr_build::row;
use crate::storage::{Csr, Data, Dense};

/// Where [`target_mode_matmul`] applies its operator: the subsystem dimensions of the state's
/// rows (QuTiP's `dims`, the first the most significant) and the subsystems it acts on, in the
/// order of the operator's own factors.
///
/// ```
/// use polymat::ops::Modes;
/// let m = Modes::new(vec![2, 3, 2], vec![2, 0]);
/// assert_eq!((m.dims(), m.targets()), (&[2, 3, 2][..], &[2, 0][..]));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Modes {
    dims: Vec<usize>,
    targets: Vec<usize>,
}

impl Modes {
    /// The subsystems `targets` of a space of dimensions `dims`. Checked when used.
    pub fn new(dims: Vec<usize>, targets: Vec<usize>) -> Modes {
        Modes { dims, targets }
    }

    /// The subsystem dimensions.
    pub fn dims(&self) -> &[usize] {
        &self.dims
    }

    /// The target subsystems, in the operator's order.
    pub fn targets(&self) -> &[usize] {
        &self.targets
    }

    /// `Π dims` and the operator's dimension `Π dims[targets]`, after checking the targets.
    fn sizes(&self, op: &str) -> Result<(usize, usize)> {
        let bad = |why: String| Error::argument(op, why);
        if self.dims.is_empty() || self.dims.contains(&0) {
            return Err(bad(format!(
                "subsystem dimensions must be at least 1, got {:?}",
                self.dims
            )));
        }
        let mut seen = vec![false; self.dims.len()];
        for &t in &self.targets {
            if t >= self.dims.len() || std::mem::replace(&mut seen[t], true) {
                return Err(bad(format!(
                    "targets {:?} must be distinct subsystems of {:?}",
                    self.targets, self.dims
                )));
            }
        }
        let prod = |ds: Vec<usize>| {
            ds.into_iter()
                .try_fold(1usize, |a, d| a.checked_mul(d))
                .ok_or_else(|| bad("the dimension overflows usize".into()))
        };
        let total = prod(self.dims.clone())?;
        let local = prod(self.targets.iter().map(|&t| self.dims[t]).collect())?;
        Ok((total, local))
    }
}

/// `(I ⊗ … ⊗ op ⊗ … ⊗ I)·state`, `op` acting on the subsystems `modes.targets()` (in its own
/// factor order) of every column of `state`. Kernels: any operator kind (as Csr: it is local)
/// with a Dense state, by mode products over the state (no operator on the whole space is
/// formed). O(columns · dim · stored entries of op / dim of op).
pub static TARGET_MODE_MATMUL: LazyLock<Dispatcher<Modes>> = LazyLock::new(|| {
    Dispatcher::builder("target_mode_matmul", 2)
        .check(|op, args, m: &Modes| {
            let (total, local) = m.sizes(op)?;
            let (a, s) = (args[0].shape(), args[1].shape());
            if a != (local, local) || s.0 != total {
                return Err(Error::shape(
                    op,
                    &[a, s],
                    format!(
                        "the operator must be {local}×{local} (the targets' dimensions) and the \
                         state {total}×k"
                    ),
                ));
            }
            Ok(())
        })
        .result_shape(|args, _| Some(args[1].shape()))
        .binary(
            "target_mode_matmul_csr_dense",
            |a: &Csr, s: &Dense, m: &Modes| target_mode_matmul_dense(a, s, m),
        )
        .builtin()
});

/// `op` applied to the subsystems `modes.targets()` of each column of `state`.
///
/// # Errors
/// [`Error::InvalidArgument`] for targets out of range or repeated; [`Error::Shape`] unless
/// `op` is square of the targets' dimension and `state` has `Π dims` rows.
///
/// ```
/// use polymat::{Csr, Dense, Out, c64};
/// use polymat::ops::{Modes, target_mode_matmul};
/// // σx on the last of three qubits: |000⟩ → |001⟩.
/// let one = c64::new(1.0, 0.0);
/// let x: polymat::Data = Csr::from_triplets((2, 2), &[0, 1], &[1, 0], &[one, one])?.into();
/// let psi: polymat::Data = Dense::from_fn(8, 1, |i, _| c64::new(f64::from(u8::from(i == 0)), 0.0)).into();
/// let out = target_mode_matmul(&x, &psi, &Modes::new(vec![2, 2, 2], vec![2]), Out::Auto)?;
/// assert_eq!(out.as_dense().unwrap().get(1, 0), one);
/// # Ok::<(), polymat::Error>(())
/// ```
#[inline]
pub fn target_mode_matmul(op: &Data, state: &Data, modes: &Modes, out: Out) -> Result<Data> {
    TARGET_MODE_MATMUL.call(&[op, state], out, modes)
}

/// Csr operator, Dense state kernel of [`target_mode_matmul`].
///
/// # Errors
/// As [`target_mode_matmul`].
pub fn target_mode_matmul_dense(op: &Csr, state: &Dense, modes: &Modes) -> Result<Dense> {
    const OP: &str = "target_mode_matmul";
    let (total, local) = modes.sizes(OP)?;
    if op.shape() != (local, local) || state.shape().0 != total {
        return Err(Error::shape(
            OP,
            &[op.shape(), state.shape()],
            "the operator must be square of the targets' dimension",
        ));
    }
    let dims = modes.dims();
    let targets = modes.targets();
    let mut sorted = targets.to_vec();
    sorted.sort_unstable();
    // The operator's index runs over the targets in its own order; the plan's over them in
    // ascending order: re-index each entry's row and column.
    let reindex = |l: usize| -> usize {
        let mut digit = vec![0usize; dims.len()];
        let mut rest = l;
        for &t in targets.iter().rev() {
            digit[t] = rest % dims[t];
            rest /= dims[t];
        }
        sorted.iter().fold(0, |acc, &t| acc * dims[t] + digit[t])
    };
    let mut entries: Vec<(usize, usize, c64)> = Vec::with_capacity(op.nnz());
    for i in 0..local {
        let r = reindex(i);
        entries.extend(row(op, i).map(|(j, v)| (r, reindex(j), v)));
    }
    let plan = Plan::from_local(dims, sorted, entries)?;
    super::kron_sum::apply_columns(OP, &plan, state)
}
