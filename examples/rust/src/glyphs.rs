//! The demo's data set, as examples/c/train_mlp/glyphs.c draws it (the same bytes for the
//! same seed): noisy, shifted, slanted 12x12 images of the ten digit glyphs. File format:
//! a 16-byte header ("GLYPHS1\n", u32 count, u16 side, u16 classes, little-endian) and
//! records of one label byte and 144 pixel bytes.

use std::io::Write;

pub const SIDE: usize = 12;
pub const PIXELS: usize = SIDE * SIDE;
pub const CLASSES: usize = 10;
pub const HEADER_BYTES: i64 = 16;
pub const RECORD_BYTES: i64 = 1 + PIXELS as i64;
const JITTER: i32 = 2;

const DIGITS: [[&str; 7]; CLASSES] = [
    [".###.", "#...#", "#..##", "#.#.#", "##..#", "#...#", ".###."],
    ["..#..", ".##..", "..#..", "..#..", "..#..", "..#..", ".###."],
    [".###.", "#...#", "....#", "...#.", "..#..", ".#...", "#####"],
    ["#####", "...#.", "..#..", "...#.", "....#", "#...#", ".###."],
    ["...#.", "..##.", ".#.#.", "#..#.", "#####", "...#.", "...#."],
    ["#####", "#....", "####.", "....#", "....#", "#...#", ".###."],
    ["..##.", ".#...", "#....", "####.", "#...#", "#...#", ".###."],
    ["#####", "....#", "...#.", "..#..", ".#...", ".#...", ".#..."],
    [".###.", "#...#", "#...#", ".###.", "#...#", "#...#", ".###."],
    [".###.", "#...#", "#...#", ".####", "....#", "...#.", ".##.."],
];

/// splitmix64, as glyphs_rng_t.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E3779B97F4A7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58476D1CE4E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D049BB133111EB);
        z ^ (z >> 31)
    }
    pub fn uniform(&mut self) -> f64 {
        (self.next() >> 11) as f64 * (1.0 / 9007199254740992.0)
    }
    pub fn normal(&mut self) -> f64 {
        let u = 1.0 - self.uniform();
        let v = self.uniform();
        (-2.0 * u.ln()).sqrt() * (6.283185307179586 * v).cos()
    }
    fn below(&mut self, n: i32) -> i32 {
        (self.next() % n as u64) as i32
    }
}

/// C's lrint in the default rounding mode: to nearest, ties to even.
fn rint(x: f64) -> f64 {
    let r = x.round();
    if (x - x.trunc()).abs() == 0.5 {
        2.0 * (x / 2.0).round()
    } else {
        r
    }
}

fn put(image: &mut [f32; PIXELS], row: i32, col: i32, value: f32) {
    if row < 0 || row >= SIDE as i32 || col < 0 || col >= SIDE as i32 {
        return;
    }
    let p = &mut image[row as usize * SIDE + col as usize];
    if value > *p {
        *p = value;
    }
}

fn draw(label: usize, rng: &mut Rng, image: &mut [f32; PIXELS]) {
    *image = [0.0; PIXELS];
    let slant = rng.below(3) - 1;
    let bold = (rng.uniform() < 0.3) as i32;
    let left = (SIDE as i32 - 5 - bold) / 2 + rng.below(2 * JITTER + 1) - JITTER;
    let top = (SIDE as i32 - 7) / 2 + rng.below(2 * JITTER + 1) - JITTER;
    let ink = 0.6 + 0.4 * rng.uniform();
    for r in 0..7 {
        let shift = rint(slant as f64 * (3 - r) as f64 / 3.0) as i32;
        for (c, ch) in DIGITS[label][r as usize].bytes().enumerate() {
            if ch != b'#' {
                continue;
            }
            for b in 0..=bold {
                if rng.uniform() < 0.05 {
                    continue;
                }
                let v = (ink * (0.7 + 0.3 * rng.uniform())) as f32;
                put(image, top + r, left + c as i32 + b + shift, v);
            }
        }
    }
    if rng.uniform() < 0.25 {
        let vertical = rng.below(2);
        let length = 3 + rng.below(4);
        let mut row = rng.below(SIDE as i32);
        let mut col = rng.below(SIDE as i32);
        for _ in 0..length {
            let v = (0.4 + 0.3 * rng.uniform()) as f32;
            put(image, row, col, v);
            if vertical != 0 {
                row += 1;
            } else {
                col += 1;
            }
        }
    }
    let strays = rng.below(5);
    for _ in 0..strays {
        // GCC evaluates put()'s arguments right to left: the value first, then the column,
        // then the row.
        let v = (0.4 + 0.6 * rng.uniform()) as f32;
        let col = rng.below(SIDE as i32);
        let row = rng.below(SIDE as i32);
        put(image, row, col, v);
    }
    for p in image.iter_mut() {
        let noisy = *p as f64 + 0.10 * rng.normal();
        *p = (if noisy < 0.0 {
            0.0
        } else if noisy > 1.0 {
            1.0
        } else {
            noisy
        }) as f32;
    }
}

/// Writes `count` images drawn with `seed` (glyphs_write_file).
pub fn write_file(path: &std::path::Path, count: u32, seed: u64) -> std::io::Result<()> {
    let mut out = Vec::with_capacity(HEADER_BYTES as usize + count as usize * RECORD_BYTES as usize);
    out.extend_from_slice(b"GLYPHS1\n");
    out.extend_from_slice(&count.to_le_bytes());
    out.extend_from_slice(&(SIDE as u16).to_le_bytes());
    out.extend_from_slice(&(CLASSES as u16).to_le_bytes());
    let mut rng = Rng(seed);
    let mut image = [0.0f32; PIXELS];
    for _ in 0..count {
        let label = rng.below(CLASSES as i32) as usize;
        draw(label, &mut rng, &mut image);
        out.push(label as u8);
        for p in image.iter() {
            out.push(rint((*p * 255.0f32) as f64) as u8);
        }
    }
    std::fs::File::create(path)?.write_all(&out)
}
