//! The conversion graph as Graphviz DOT (petgraph's `Dot`).

use petgraph::dot::Dot;
use petgraph::graph::{DiGraph, NodeIndex};
use petgraph::visit::EdgeRef;

use super::ConversionRegistry;

impl ConversionRegistry {
    /// The conversion graph in Graphviz DOT: one node per kind (built-in kinds drawn as boxes),
    /// one edge per converter labelled with its weight, dashed when the converter is partial or
    /// lossy (such converters only ever end a chain).
    ///
    /// Render it with `dot -Tsvg registry.dot > registry.svg`.
    ///
    /// ```
    /// let dot = polymat::registry().to_dot();
    /// assert!(dot.starts_with("digraph {"));
    /// assert!(dot.contains("\"Csr\"") && dot.contains("\"1.4\""));
    /// ```
    pub fn to_dot(&self) -> String {
        let snap = self.snapshot();
        let mut g: DiGraph<String, String> = DiGraph::new();
        let nodes: Vec<NodeIndex> = snap
            .kinds
            .iter()
            .map(|k| g.add_node(k.name.clone()))
            .collect();
        let mut dashed = Vec::new();
        for e in &snap.edges {
            let mut label = format!("{}", e.weight);
            if !e.total {
                label.push_str(" partial");
            }
            if !e.exact {
                label.push_str(" lossy");
            }
            let id = g.add_edge(nodes[e.from.index()], nodes[e.to.index()], label);
            if !(e.exact && e.total) {
                dashed.push(id);
            }
        }
        let builtin: Vec<bool> = snap.kinds.iter().map(|k| k.builtin).collect();
        let edge_attr = |_: &DiGraph<String, String>,
                         e: petgraph::graph::EdgeReference<'_, String>| {
            if dashed.contains(&e.id()) {
                "style = dashed".to_owned()
            } else {
                String::new()
            }
        };
        let node_attr = |_: &DiGraph<String, String>, n: (NodeIndex, &String)| {
            if builtin[n.0.index()] {
                "shape = box".to_owned()
            } else {
                "shape = ellipse".to_owned()
            }
        };
        format!(
            "{}",
            Dot::with_attr_getters(&g, &[], &edge_attr, &node_attr)
        )
    }
}
