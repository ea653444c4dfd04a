//! A dispatcher's whole table, as a list of [`Explanation`]s or as Graphviz DOT.

use std::fmt::Write as _;

use super::{Dispatcher, Explanation, Out, Resolved, ReturnValue};
use crate::storage::Kind;

impl<P: Send + Sync + 'static, R: ReturnValue> Dispatcher<P, R> {
    /// Every filled cell of the table, from one consistent snapshot: for each tuple of input
    /// kinds (in kind order, the last input varying fastest) and each output (`Auto`, then
    /// every kind; only `Auto` for operations that return no `Data`), what a call would do.
    /// Cells that no specialisation can serve are left out.
    ///
    /// ```
    /// use polymat::{Kind, Out, ops::ADD};
    /// let table = ADD.table();
    /// // The 7 built-in kinds for two inputs, each with Auto and the 5 stored kinds as
    /// // outputs; the lazy kinds (KronSum, SuperOp) are outputs only of their own sums.
    /// assert_eq!(table.len(), 7 * 7 * 6 + 2);
    /// let cell = table.iter().find(|e| e.inputs == [Kind::CSR, Kind::DENSE] && e.out == Out::Csr);
    /// assert_eq!(cell.map(|e| e.kernel.as_str()), Some("add_csr_dense"));
    /// ```
    pub fn table(&self) -> Vec<Explanation> {
        let state = self.inner.state.load_full();
        let k = state.snap.n_kinds();
        let arity = self.inner.arity;
        let outs: Vec<Out> = if R::DISPATCHED {
            std::iter::once(Out::Auto)
                .chain((0..k).map(|i| Out::Kind(Kind(i as u32))))
                .collect()
        } else {
            vec![Out::Auto]
        };
        let mut rows = Vec::new();
        let mut kinds = vec![Kind(0); arity];
        let tuples = k.checked_pow(arity as u32).unwrap_or(0);
        for t in 0..tuples {
            let mut rest = t;
            for slot in kinds.iter_mut().rev() {
                *slot = Kind((rest % k) as u32);
                rest /= k;
            }
            for &out in &outs {
                let Some(index) = state
                    .table
                    .index(kinds.iter().copied(), out.kind())
                    .filter(|&i| state.table.entries[i].is_some())
                else {
                    continue;
                };
                let resolved = Resolved {
                    dispatcher: self.clone(),
                    state: state.clone(),
                    index,
                    kinds: kinds.clone(),
                    out,
                };
                rows.push(resolved.explain());
            }
        }
        rows
    }

    /// The table in Graphviz DOT: one box per kernel, one node per served cell (`(Csr, Dense)
    /// -> Csr`), an edge from each cell to its kernel labelled with the conversion weight,
    /// solid for direct cells and dashed for those that convert. Render it with
    /// `dot -Tsvg add.dot > add.svg`.
    ///
    /// ```
    /// let dot = polymat::ops::ADD.to_dot();
    /// assert!(dot.starts_with("digraph \"add\" {"));
    /// assert!(dot.contains("\"add_csr_dense\" [shape = box]"));
    /// assert!(dot.contains("\"(Csr, Dense) -> Csr\" -> \"add_csr_dense\" [label = \"1.4\", style = dashed]"));
    /// ```
    pub fn to_dot(&self) -> String {
        let rows = self.table();
        let mut s = String::new();
        let _ = writeln!(s, "digraph {} {{", quote(&self.inner.name));
        let _ = writeln!(s, "    rankdir = LR;");
        let mut kernels: Vec<&str> = rows.iter().map(|e| e.kernel.as_str()).collect();
        kernels.sort_unstable();
        kernels.dedup();
        for k in kernels {
            let _ = writeln!(s, "    {} [shape = box];", quote(k));
        }
        for e in &rows {
            let ins: Vec<String> = e.inputs.iter().map(|k| e.kind_name(*k)).collect();
            let out = match e.out.kind() {
                Some(k) => e.kind_name(k),
                None => "Auto".to_owned(),
            };
            let cell = format!("({}) -> {out}", ins.join(", "));
            let _ = writeln!(s, "    {} [shape = plaintext];", quote(&cell));
            let _ = writeln!(
                s,
                "    {} -> {} [label = {}{}];",
                quote(&cell),
                quote(&e.kernel),
                quote(&format!("{}", e.weight)),
                if e.direct { "" } else { ", style = dashed" }
            );
        }
        s.push_str("}\n");
        s
    }
}

/// A DOT string literal.
fn quote(s: &str) -> String {
    let mut q = String::with_capacity(s.len() + 2);
    q.push('"');
    for ch in s.chars() {
        match ch {
            '"' => q.push_str("\\\""),
            '\\' => q.push_str("\\\\"),
            '\n' => q.push_str("\\n"),
            c => q.push(c),
        }
    }
    q.push('"');
    q
}
