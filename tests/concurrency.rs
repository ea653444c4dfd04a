//! Calls from several threads while another thread keeps registering types, conversions and
//! specialisations: every result must be right, and no call may fail.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;

use common::*;
use polymat::ops::{ADD, MATMUL};
use polymat::{
    Batch, Conversion, Csr, Data, Dense, Dispatcher, Kind, Out, Specialisation, Storage, c64,
    registry,
};

/// A family of distinct storage types, one per `N`.
#[derive(Clone, Debug)]
struct Tagged<const N: usize>(Dense);

impl<const N: usize> Storage for Tagged<N> {
    fn shape(&self) -> (usize, usize) {
        self.0.shape()
    }
}

/// Registers `Tagged<N>` with two conversions and an add kernel, in one batch, then uses it.
fn register<const N: usize>() {
    let mut b = Batch::new();
    b.register_type::<Tagged<N>>(&format!("Tagged{N}"), &[])
        .add_conversion(Conversion::new(|t: &Tagged<N>| Ok(t.0.clone()), 1.0))
        .add_conversion(Conversion::new(|d: &Dense| Ok(Tagged::<N>(d.clone())), 1.0));
    b.add_specialisation(
        &*ADD,
        Specialisation::binary(
            &format!("add_tagged{N}"),
            |a: &Tagged<N>, b: &Tagged<N>, s: &c64| {
                Ok(Tagged::<N>(polymat::ops::add::add_dense(&a.0, &b.0, *s)?))
            },
        ),
    );
    registry().commit(b).unwrap();
    // A correct alternative kernel for a built-in pair: whichever table a caller sees, the
    // answer is the same.
    MATMUL
        .add_specialisation(Specialisation::binary(
            &format!("matmul_csr_csr_dense{N}"),
            |a: &Csr, b: &Csr, _: &()| {
                polymat::ops::matmul::matmul_csr_dense(
                    a,
                    &polymat::to_type::<Dense>(&Data::from(b.clone()))?,
                )
            },
        ))
        .unwrap();
    // A fresh dispatcher while others are running.
    let d = Dispatcher::<()>::builder(&format!("noop{N}"), 1)
        .specialisation(Specialisation::unary("noop", |a: &Dense, _: &()| {
            Ok(a.clone())
        }))
        .build()
        .unwrap();
    let x = Data::new(Tagged::<N>(Dense::identity(3))).unwrap();
    let y = polymat::add(&x, &x, Out::Auto).unwrap();
    assert_eq!(y.kind(), registry().kind_of::<Tagged<N>>().unwrap());
    assert_eq!(
        polymat::trace(&d.call(&[&y], Out::Auto, &()).unwrap()).unwrap(),
        c64::new(6.0, 0.0)
    );
}

#[test]
fn calls_stay_correct_during_registrations() {
    let stop = Arc::new(AtomicBool::new(false));
    let workers: Vec<_> = (0..3u64)
        .map(|t| {
            let stop = stop.clone();
            thread::spawn(move || {
                let mut rng = Rng::new(100 + t);
                let mut calls = 0usize;
                while !stop.load(Ordering::Relaxed) || calls < 200 {
                    let a = random_ref(&mut rng, 4, 4, 0.5);
                    let b = random_ref(&mut rng, 4, 4, 0.5);
                    let ka = KINDS[(rng.next_u64() % KINDS.len() as u64) as usize];
                    let kb = KINDS[(rng.next_u64() % KINDS.len() as u64) as usize];
                    let (x, y) = (make(&a, ka), make(&b, kb));
                    let out = [Out::Auto, Out::Dense, Out::Csr][(rng.next_u64() % 3) as usize];
                    assert_data_close(
                        &polymat::add(&x, &y, out).unwrap(),
                        &zip(&a, &b, |p, q| p + q),
                        "add",
                    );
                    assert_data_close(
                        &polymat::matmul(&x, &y, out).unwrap(),
                        &matmul(&a, &b),
                        "matmul",
                    );
                    assert!(
                        ADD.get(&[Kind::DENSE, Kind::DENSE], Out::Auto)
                            .unwrap()
                            .is_direct()
                    );
                    calls += 1;
                }
                calls
            })
        })
        .collect();
    let registrar = thread::spawn(|| {
        register::<0>();
        register::<1>();
        register::<2>();
        register::<3>();
        register::<4>();
        register::<5>();
        register::<6>();
        register::<7>();
        register::<8>();
        register::<9>();
        register::<10>();
        register::<11>();
    });
    registrar.join().unwrap();
    stop.store(true, Ordering::Relaxed);
    for w in workers {
        assert!(w.join().unwrap() >= 200);
    }
    assert!(registry().kinds().len() >= 14);
}

#[test]
fn handles_are_send_and_sync() {
    fn check<T: Send + Sync>() {}
    check::<Data>();
    check::<polymat::ConversionRegistry>();
    check::<Dispatcher<c64>>();
    check::<Dispatcher<(), c64>>();
    check::<polymat::Resolved<c64, Data>>();
}

/// A type registered only by [`conversions_see_a_commit_made_on_another_thread`].
#[derive(Clone, Debug)]
struct Late(Dense);

impl Storage for Late {
    fn shape(&self) -> (usize, usize) {
        self.0.shape()
    }
}

/// `to` keeps the registry's snapshot in a per-thread cache: a commit made on another thread
/// must be seen by the first conversion after it, in both directions and with data of the new
/// kind made on yet another thread.
#[test]
fn conversions_see_a_commit_made_on_another_thread() {
    let d: Data = Dense::identity(2).into();
    // Fills this thread's cache with the snapshot before the commit.
    assert_eq!(polymat::to(Kind::CSR, &d).unwrap().kind(), Kind::CSR);
    thread::spawn(|| {
        let mut b = Batch::new();
        b.register_type::<Late>("Late", &[])
            .add_conversion(Conversion::new(|t: &Late| Ok(t.0.clone()), 1.0))
            .add_conversion(Conversion::new(|d: &Dense| Ok(Late(d.clone())), 1.0));
        registry().commit(b).unwrap();
    })
    .join()
    .unwrap();
    let kind = registry().kind_of::<Late>().unwrap();
    let late = polymat::to(kind, &d).unwrap();
    assert_eq!(late.kind(), kind);
    let made_elsewhere = thread::spawn(|| Data::new(Late(Dense::identity(2))).unwrap())
        .join()
        .unwrap();
    for x in [&late, &made_elsewhere] {
        let back = polymat::to(Kind::CSR, x).unwrap();
        assert_eq!(back.kind(), Kind::CSR);
        assert_eq!(polymat::trace(&back).unwrap(), c64::new(2.0, 0.0));
    }
}
