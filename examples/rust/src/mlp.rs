//! The model of examples/c/train_mlp/mlp.c: 144-H-10, ReLU, softmax, forward and backward
//! on host slices, with float64 gradient sums (so that how rows are split between replicas
//! does not change the float32 result).

use crate::glyphs::Rng;

#[derive(Clone, Copy)]
pub struct Shape {
    pub inputs: usize,
    pub hidden: usize,
    pub classes: usize,
}

pub const NAMES: [&str; 4] = ["dense1/kernel", "dense1/bias", "dense2/kernel", "dense2/bias"];

impl Shape {
    /// The dimensions of parameter p (W1, b1, W2, b2).
    pub fn dims(&self, p: usize) -> Vec<i64> {
        match p {
            0 => vec![self.inputs as i64, self.hidden as i64],
            1 => vec![self.hidden as i64],
            2 => vec![self.hidden as i64, self.classes as i64],
            _ => vec![self.classes as i64],
        }
    }
    pub fn size(&self, p: usize) -> usize {
        self.dims(p).iter().product::<i64>() as usize
    }
}

/// Glorot-uniform kernels and zero biases drawn from `seed` (mlp_init).
pub fn init(shape: Shape, seed: u64) -> Vec<Vec<f32>> {
    let mut rng = Rng(seed);
    (0..4)
        .map(|p| {
            let dims = shape.dims(p);
            let limit = if dims.len() == 2 { (6.0 / (dims[0] + dims[1]) as f64).sqrt() } else { 0.0 };
            (0..shape.size(p)).map(|_| (limit * (2.0 * rng.uniform() - 1.0)) as f32).collect()
        })
        .collect()
}

#[derive(Default)]
pub struct Stats {
    pub loss_sum: f64,
    pub correct: i64,
}

/// Forward over x [rows, inputs]; with `grads`, the backward pass too: grads[p] gets the SUM
/// over the rows of d loss / d params[p].
pub fn forward_backward(
    shape: Shape,
    params: &[&[f32]; 4],
    x: &[f32],
    labels: &[i32],
    mut grads: Option<&mut [Vec<f64>; 4]>,
) -> Stats {
    let (d_in, h_n, c_n) = (shape.inputs, shape.hidden, shape.classes);
    let (w1, b1, w2, b2) = (params[0], params[1], params[2], params[3]);
    let mut h = vec![0.0f32; h_n];
    let mut dh = vec![0.0f32; h_n];
    let mut z = vec![0.0f32; c_n];
    let mut dz = vec![0.0f32; c_n];
    if let Some(g) = grads.as_deref_mut() {
        for (p, gp) in g.iter_mut().enumerate() {
            gp.clear();
            gp.resize(shape.size(p), 0.0);
        }
    }
    let mut stats = Stats::default();
    for (i, &label) in labels.iter().enumerate() {
        let xi = &x[i * d_in..(i + 1) * d_in];
        h.copy_from_slice(b1);
        for d in 0..d_in {
            let v = xi[d];
            if v == 0.0 {
                continue;
            }
            let w = &w1[d * h_n..(d + 1) * h_n];
            for j in 0..h_n {
                h[j] += v * w[j];
            }
        }
        for v in h.iter_mut() {
            *v = if *v > 0.0 { *v } else { 0.0 };
        }
        z.copy_from_slice(b2);
        for j in 0..h_n {
            let v = h[j];
            if v == 0.0 {
                continue;
            }
            let w = &w2[j * c_n..(j + 1) * c_n];
            for c in 0..c_n {
                z[c] += v * w[c];
            }
        }
        let label = label as usize;
        let mut best = 0;
        let mut top = z[0];
        for c in 1..c_n {
            if z[c] > top {
                top = z[c];
                best = c;
            }
        }
        let mut sum = 0.0f64;
        for c in 0..c_n {
            sum += ((z[c] - top) as f64).exp();
        }
        stats.loss_sum += sum.ln() - (z[label] - top) as f64;
        stats.correct += (best == label) as i64;
        let g = match grads.as_deref_mut() {
            Some(g) => g,
            None => continue,
        };
        for c in 0..c_n {
            dz[c] = (((z[c] - top) as f64).exp() / sum) as f32;
        }
        dz[label] -= 1.0;
        let (g_w1, rest) = g.split_at_mut(1);
        let (g_b1, rest) = rest.split_at_mut(1);
        let (g_w2, g_b2) = rest.split_at_mut(1);
        let (g_w1, g_b1, g_w2, g_b2) = (&mut g_w1[0], &mut g_b1[0], &mut g_w2[0], &mut g_b2[0]);
        for c in 0..c_n {
            g_b2[c] += dz[c] as f64;
        }
        for j in 0..h_n {
            let w = &w2[j * c_n..(j + 1) * c_n];
            let mut back = 0.0f32;
            for c in 0..c_n {
                back += w[c] * dz[c];
            }
            dh[j] = if h[j] > 0.0 { back } else { 0.0 };
            if h[j] == 0.0 {
                continue;
            }
            let gr = &mut g_w2[j * c_n..(j + 1) * c_n];
            for c in 0..c_n {
                gr[c] += h[j] as f64 * dz[c] as f64;
            }
        }
        for j in 0..h_n {
            g_b1[j] += dh[j] as f64;
        }
        for d in 0..d_in {
            let v = xi[d];
            if v == 0.0 {
                continue;
            }
            let gr = &mut g_w1[d * h_n..(d + 1) * h_n];
            for j in 0..h_n {
                gr[j] += v as f64 * dh[j] as f64;
            }
        }
    }
    stats
}
