//! Kind groups: `Out::Group` picks the cheapest member, sticky groups keep `Out::Auto` results
//! in the group, built-in kinds keep their groups.

use polymat::{
    Batch, Conversion, Csr, Data, DefaultScope, Dense, Error, Group, Kind, Out, Specialisation,
    Storage, c64, registry,
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

/// Two user kinds in one sticky group, the second with its own `add`: a stand-in for GpuDense
/// and GpuCsr in the GPU group.
#[derive(Debug, Clone)]
struct PairDense(Dense);

#[derive(Debug, Clone)]
struct PairSparse(Csr);

impl Storage for PairDense {
    fn shape(&self) -> (usize, usize) {
        self.0.shape()
    }
}

impl Storage for PairSparse {
    fn shape(&self) -> (usize, usize) {
        self.0.shape()
    }
}

/// `sub` is one generic kernel (it calls `add` with −1). Under a sticky group its `Out::Auto`
/// cell must let `add` choose: `add` has a PairSparse kernel, so PairSparse − PairSparse stays
/// PairSparse, not the group's first kind (on an H200 this sent GpuCsr − GpuCsr to GpuDense).
#[test]
fn a_generic_kernel_keeps_a_result_already_in_its_sticky_group() {
    let pair = Group::new_sticky("pair-memory").unwrap();
    let mut b = Batch::new();
    b.register_type::<PairDense>("PairDense", &[])
        .register_type::<PairSparse>("PairSparse", &[])
        .add_conversion(Conversion::new(|r: &PairDense| Ok(r.0.clone()), 2.0))
        .add_conversion(Conversion::new(|d: &Dense| Ok(PairDense(d.clone())), 1.0))
        .add_conversion(Conversion::new(|r: &PairSparse| Ok(r.0.clone()), 2.0))
        .add_conversion(Conversion::new(|c: &Csr| Ok(PairSparse(c.clone())), 1.0))
        .add_to_group::<PairDense>(pair)
        .add_to_group::<PairSparse>(pair);
    registry().commit(b).unwrap();
    polymat::ops::ADD
        .add_specialisation(Specialisation::binary(
            "add_pair_sparse",
            |a: &PairSparse, b: &PairSparse, s: &c64| {
                let (a, b): (Data, Data) = (a.0.clone().into(), b.0.clone().into());
                Ok(PairSparse(
                    polymat::add_scaled(&a, &b, *s, Out::Csr)?.to_type()?,
                ))
            },
        ))
        .unwrap();
    let (dense_kind, sparse_kind) = (
        registry().kind_of::<PairDense>().unwrap(),
        registry().kind_of::<PairSparse>().unwrap(),
    );
    assert_eq!(registry().kinds_in(pair), vec![dense_kind, sparse_kind]);

    let x = Data::new(PairSparse(
        Csr::from_triplets((2, 2), &[0, 1], &[1, 0], &[c(1.0), c(-2.0)]).unwrap(),
    ))
    .unwrap();
    let d = polymat::sub(&x, &x, Out::Auto).unwrap();
    assert_eq!(
        d.kind(),
        sparse_kind,
        "{}",
        polymat::ops::SUB
            .explain(&[sparse_kind; 2], Out::Auto)
            .unwrap()
    );
    assert!(polymat::iszero(&d, 0.0).unwrap());
    // A result that leaves the group is still moved back into it: Csr + PairDense has no
    // kernel of the group (it runs on Dense), and comes back as the group's cheapest kind.
    let y = Data::new(PairDense(Dense::identity(2))).unwrap();
    let s: Data = Csr::identity(2).into();
    assert_eq!(polymat::sub(&y, &s, Out::Auto).unwrap().kind(), dense_kind);
    // An explicit output is still what the generic kernel is asked for.
    assert_eq!(
        polymat::sub(&x, &x, Out::Dense).unwrap().kind(),
        Kind::DENSE
    );
}
