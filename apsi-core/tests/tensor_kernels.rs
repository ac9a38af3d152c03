//! The fast tensor paths give the same results as the general ones: the
//! fused `a * b + c` (globals, locals, constants, numbers, views, traced
//! inputs, non-tensors), softmax rows with NaN and infinities, short-axis
//! sums, matmul on every layout BLAS takes or refuses, and `int(tensor)`.

mod vm_common;

use vm_common::{error, output};

fn all_true(src: &str) {
    let out = output(src);
    assert!(!out.is_empty(), "no output");
    for (i, line) in out.lines().enumerate() {
        assert_eq!(line, "true", "line {} of:\n{out}", i + 1);
    }
}

#[test]
fn fused_mul_add_matches_two_operators() {
    all_true(
        r#"
seed(3)
n = 100003
a = randn(n, dtype=f32)
b = randn(n, dtype=f32)
c = randn(n, dtype=f32)
p = a * b
print((a * b + c == p + c).all())
print((a * b + c).dtype == f32)
print((a * 2.5 + c == (a * 2.5) + c).all())
print((2.5 * a + c == (2.5 * a) + c).all())
print((a * b + 1.25 == p + 1.25).all())
print((a * b + 3 == p + 3).all())
def local(x, y, z):
    return x * y + z
print((local(a, b, c) == p + c).all())
print((local(a, b, 0.5) == p + 0.5).all())
x = randn((300, 400))
y = randn((300, 400))
z = randn((300, 400))
q = x * y
print((x * y + z == q + z).all())
print((x.T * y.T + z.T == (q + z).T).all())
print((x * y + z[0] == q + z[0]).all())
print((x * y + z.astype(f32) == q + z.astype(f32).astype(f64)).all())
print((x * y + z).shape == (300, 400))
print(local(2, 3, 4) == 10)
print(local(2.0, 3, 4.5) == 10.5)
print(local([1], 2, [3]) == [1, 1, 3])
print(local("ab", 2, "c") == "ababc")
"#,
    );
}

#[test]
fn fused_mul_add_keeps_gradients() {
    all_true(
        r#"
seed(4)
a = randn(40000)
b = randn(40000)
c = randn(40000)
def f(x):
    return (x * b + c).sum()
g = grad(f)(a)
print((g == b).all())
"#,
    );
}

#[test]
fn fused_mul_add_errors_as_before() {
    let (kind, msg) = error("a = zeros(40000)\nb = zeros(3)\nc = zeros(40000)\nprint(a * b + c)\n");
    assert_eq!(kind, "ShapeError", "{msg}");
    let (kind, _) = error("a = zeros(40000)\nc = zeros(40000)\nprint(a * none_such + c)\n");
    assert_eq!(kind, "NameError");
}

#[test]
fn softmax_rows_nan_inf_and_sums() {
    let out = output(
        r#"
s = softmax(tensor([[1.0, 2.0, float("nan")], [0.0, 0.0, 0.0], [float("inf"), 1.0, 2.0], [-1000.0, 0.0, 1000.0]], dtype=f32), axis=1)
print(s)
seed(5)
X = randn((64, 1000), dtype=f32)
r = softmax(X, axis=1).sum(axis=1)
print(((r - 1.0).abs() < 1e-5).all())
Y = randn((64, 1000))
print(((softmax(Y, axis=0).sum(axis=0) - 1.0).abs() < 1e-12).all())
"#,
    );
    let want = "tensor([[       nan,        nan,        nan],\n        [0.33333334, 0.33333334, 0.33333334],\n        [       nan,        nan,        nan],\n        [       0.0,        0.0,        1.0]], dtype=f32)\ntrue\ntrue\n";
    assert_eq!(out, want);
}

#[test]
fn short_axis_sums_in_order() {
    all_true(
        r#"
seed(6)
S = randn((100000, 3))
r = S.sum(axis=1)
print((r == S[:, 0] + S[:, 1] + S[:, 2]).all())
T = randn((50000, 2), dtype=f32)
print((T.sum(axis=1) == T[:, 0] + T[:, 1]).all())
U = randn((40000, 5))
print((U.sum(axis=1) == U[:, 0] + U[:, 1] + U[:, 2] + U[:, 3] + U[:, 4]).all())
print(str(tensor([[-0.0, -0.0, -0.0]]).sum(axis=1)) == "tensor([-0.0])")
"#,
    );
}

#[test]
fn matmul_layouts() {
    all_true(
        r#"
seed(7)
A = randn((70, 50))
B = randn((50, 60))
def slow(x, y):
    m = x.shape[0]
    n = y.shape[1]
    out = zeros((m, n))
    for i in range(m):
        out[i] = (x[i].reshape((-1, 1)) * y).sum(axis=0)
    return out
ref = slow(A, B)
def close(p, q):
    return ((p - q).abs() < 1e-9).all()
print(close(A @ B, ref))
print(close(A.T.T @ B, ref))
print(close(A.T.copy().T @ B.T.copy().T, ref))
print(close(A[:, ::1] @ B[::1, :], ref))
C = randn((70, 100))
print(close(C[:, ::2] @ B, slow(C[:, ::2], B)))
print(close((A @ B[:, 0]), ref[:, 0]))
print(close((A[0] @ B), ref[0]))
print(close(A.astype(f32) @ B.astype(f32), ref.astype(f32)) or ((A.astype(f32) @ B.astype(f32)) - ref).abs().max() < 1e-3)
print((zeros((3, 0)) @ zeros((0, 4)) == zeros((3, 4))).all())
"#,
    );
}

#[test]
fn int_of_one_element_tensor() {
    let out = output(
        "print(int(tensor([3.7])))\nprint(int(tensor([[-2.5]])))\nprint(int(tensor(7)))\nprint(int(tensor([true])))\n",
    );
    assert_eq!(out, "3\n-2\n7\n1\n");
    let (kind, _) = error("print(int(tensor([1, 2])))\n");
    assert_eq!(kind, "ValueError");
}
