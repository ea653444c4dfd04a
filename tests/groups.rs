//! Kind groups: `Out::Group` picks the cheapest member, sticky groups keep `Out::Auto` results
//! in the group, built-in kinds keep their groups.

use polymat::{
    Batch, Conversion, Csr, Data, DefaultScope, Dense, Error, Group, Kind, Out, Storage, c64,
    registry,
};

fn c(re: f64) -> c64 {
    c64::new(re, 0.0)
}

#[test]
fn builtin_groups() {
    let r = registry();
    assert_eq!(r.kinds_in(Group::DENSE), vec![Kind::DENSE, Kind::GPU_DENSE]);
    assert_eq!(
        r.kinds_in(Group::SPARSE),
        vec![Kind::CSR, Kind::DIA, Kind::GPU_CSR]
    );
    assert_eq!(r.kinds_in(Group::GPU), vec![Kind::GPU_DENSE, Kind::GPU_CSR]);
    assert_eq!(r.groups_of(Kind::GPU_CSR), vec![Group::SPARSE, Group::GPU]);
    assert_eq!(r.groups_of(Kind::GPU_DENSE), vec![Group::DENSE, Group::GPU]);
    // Built-in kinds keep their groups.
    let mine = Group::new("mine").unwrap();
    let mut b = Batch::new();
    b.add_kind_to_group(Kind::DENSE, mine);
    let err = registry().commit(b).unwrap_err();
    assert!(err.to_string().contains("built in"), "{err}");
    assert!(registry().kinds_in(mine).is_empty());
}

#[test]
fn out_group_picks_the_cheapest_member() {
    let d: Data = Dense::identity(3).into();
    let s: Data = Csr::identity(3).into();
    let sparse = Out::Group(Group::SPARSE);
    assert_eq!(polymat::add(&d, &d, sparse).unwrap().kind(), Kind::CSR);
    assert_eq!(polymat::kron(&s, &d, sparse).unwrap().kind(), Kind::CSR);
    // Dense (weight 1 from Csr) beats GpuDense (2) in the dense group.
    let dense = Out::Group(Group::DENSE);
    assert_eq!(polymat::matmul(&s, &s, dense).unwrap().kind(), Kind::DENSE);
    assert_eq!(
        polymat::ops::MATMUL
            .resolve_output(&[Kind::CSR, Kind::CSR], dense)
            .unwrap(),
        Out::Dense
    );
    let e = polymat::ops::MATMUL
        .explain(&[Kind::CSR, Kind::CSR], dense)
        .unwrap();
    assert_eq!(e.result, Some(Kind::DENSE));
    // A plain-valued operation has no output to choose.
    assert!(matches!(
        polymat::ops::TRACE.call(&[&s], sparse, &()),
        Err(Error::OutputNotDispatched { .. })
    ));
    // An empty group serves nothing, with an error naming it.
    let empty = Group::new("nobody-here").unwrap();
    let err = polymat::add(&d, &d, Out::Group(empty)).unwrap_err();
    assert!(err.to_string().contains("group:nobody-here"), "{err}");
    // As a default output (QuTiP's default_dtype = "sparse").
    polymat::with_default_output(sparse, DefaultScope::Full, || {
        assert_eq!(
            polymat::matmul(&d, &d, Out::Auto).unwrap().kind(),
            Kind::CSR
        );
        assert_eq!(polymat::identity(2, Out::Auto).unwrap().kind(), Kind::CSR);
    });
}

/// A user kind in a sticky group of its own: a stand-in for device or distributed memory.
#[derive(Debug, Clone)]
struct Remote(Dense);

impl Storage for Remote {
    fn shape(&self) -> (usize, usize) {
        self.0.shape()
    }
}

#[test]
fn sticky_groups_keep_auto_results() {
    let remote = Group::new_sticky("remote-memory").unwrap();
    let mut b = Batch::new();
    b.register_type::<Remote>("Remote", &[])
        .add_conversion(Conversion::new(|r: &Remote| Ok(r.0.clone()), 2.0))
        .add_conversion(Conversion::new(|d: &Dense| Ok(Remote(d.clone())), 1.0))
        .add_to_group::<Remote>(remote);
    registry().commit(b).unwrap();
    let kind = registry().kind_of::<Remote>().unwrap();
    assert_eq!(registry().groups_of(kind), vec![remote]);

    let m = Dense::from_rows(&[[c(1.0), c(2.0)], [c(3.0), c(4.0)]]).unwrap();
    let r = Data::new(Remote(m.clone())).unwrap();
    let s: Data = Csr::identity(2).into();
    // No kernel takes Remote: every operation computes on Dense and moves the result back.
    for result in [
        polymat::add(&r, &s, Out::Auto),
        polymat::matmul(&s, &r, Out::Auto),
        polymat::kron(&r, &r, Out::Auto),
        polymat::expm(&r, Out::Auto),
        polymat::adjoint(&r, Out::Auto),
        (&r - &s),
        (c(2.0) * &r),
    ] {
        assert_eq!(result.unwrap().kind(), kind);
    }
    let e = polymat::ops::ADD
        .explain(&[kind, Kind::CSR], Out::Auto)
        .unwrap();
    assert_eq!(e.result, Some(kind));
    assert!(e.to_string().contains("Dense -> Remote"), "{e}");
    // An explicit output still wins, and CPU inputs are unaffected.
    assert_eq!(
        polymat::add(&r, &s, Out::Dense).unwrap().kind(),
        Kind::DENSE
    );
    assert_eq!(polymat::add(&s, &s, Out::Auto).unwrap().kind(), Kind::CSR);
    // Values are right.
    let back: Dense = polymat::add(&r, &s, Out::Auto).unwrap().to_type().unwrap();
    assert_eq!(back.to_string(), "[[2, 2], [3, 5]]");
}
