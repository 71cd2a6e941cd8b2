// The WebGPU backend's compute shaders (WGSL), one per operation of model.js, plus the two ceilings'
// benchmarks. Every parameter block is 16 scalars (u32 first, then f32), bound at its own 256-byte slot.
// Simple kernels, written to be read: a tiled matrix product, a workgroup per row or per (query, head).

const HASH = /* wgsl */ `
fn lowbias32(value: u32) -> u32 {
  var x = value;
  x ^= x >> 16u; x *= 0x7feb352du; x ^= x >> 15u; x *= 0x846ca68bu; x ^= x >> 16u;
  return x;
}`;

export const KERNELS = {
  // Seeded weights, bit for bit the values of weights.js.
  fill: /* wgsl */ `${HASH}
struct P { n: u32, key: u32, u2: u32, u3: u32, scale2: f32 }
@group(0) @binding(0) var<uniform> p: P;
@group(0) @binding(1) var<storage, read_write> out: array<f32>;
@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) groups: vec3u) {
  for (var i = gid.x; i < p.n; i += groups.x * 256u) {
    let unit = f32(lowbias32(i ^ p.key) >> 8u) * 5.9604644775390625e-8;
    out[i] = (unit - 0.5) * p.scale2;
  }
}`,

  embed: /* wgsl */ `
struct P { rows: u32, d: u32 }
@group(0) @binding(0) var<uniform> p: P;
@group(0) @binding(1) var<storage, read> tokens: array<u32>;
@group(0) @binding(2) var<storage, read> table: array<f32>;
@group(0) @binding(3) var<storage, read_write> x: array<f32>;
@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(local_invocation_id) lid: vec3u) {
  let t = wg.x;
  for (var i = lid.x; i < p.d; i += 64u) { x[t * p.d + i] = table[tokens[t] * p.d + i]; }
}`,

  rmsnorm: /* wgsl */ `
struct P { rows: u32, d: u32, row0: u32, u3: u32, eps: f32 }
@group(0) @binding(0) var<uniform> p: P;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read> w: array<f32>;
@group(0) @binding(3) var<storage, read_write> y: array<f32>;
var<workgroup> partial: array<f32, 64>;
@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(local_invocation_id) lid: vec3u) {
  let src = (p.row0 + wg.x) * p.d;
  var sum = 0.0;
  for (var i = lid.x; i < p.d; i += 64u) { sum += x[src + i] * x[src + i]; }
  partial[lid.x] = sum;
  workgroupBarrier();
  for (var stride = 32u; stride > 0u; stride >>= 1u) {
    if (lid.x < stride) { partial[lid.x] += partial[lid.x + stride]; }
    workgroupBarrier();
  }
  let inv = 1.0 / sqrt(partial[0] / f32(p.d) + p.eps);
  for (var i = lid.x; i < p.d; i += 64u) { y[wg.x * p.d + i] = x[src + i] * (w[i] * inv); }
}`,

  // y (T, N) = x (T, K) · Wᵀ: a 64×64 block of outputs per workgroup, 4×4 per invocation, K in tiles of 16.
  matmul: /* wgsl */ `
struct P { T: u32, N: u32, K: u32, accumulate: u32 }
@group(0) @binding(0) var<uniform> p: P;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read> w: array<f32>;
@group(0) @binding(3) var<storage, read_write> y: array<f32>;
var<workgroup> xs: array<array<f32, 16>, 64>;
var<workgroup> ws: array<array<f32, 16>, 64>;
@compute @workgroup_size(16, 16)
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(local_invocation_id) lid: vec3u) {
  let t0 = wg.y * 64u;
  let n0 = wg.x * 64u;
  let id = lid.y * 16u + lid.x;
  var acc: array<f32, 16>;
  for (var k0 = 0u; k0 < p.K; k0 += 16u) {
    for (var i = 0u; i < 4u; i++) {
      let e = id + i * 256u;
      let r = e / 16u;
      let c = e % 16u;
      let k = k0 + c;
      var xv = 0.0;
      if (t0 + r < p.T && k < p.K) { xv = x[(t0 + r) * p.K + k]; }
      xs[r][c] = xv;
      var wv = 0.0;
      if (n0 + r < p.N && k < p.K) { wv = w[(n0 + r) * p.K + k]; }
      ws[r][c] = wv;
    }
    workgroupBarrier();
    for (var c = 0u; c < 16u; c++) {
      let a = vec4f(xs[lid.y * 4u][c], xs[lid.y * 4u + 1u][c], xs[lid.y * 4u + 2u][c], xs[lid.y * 4u + 3u][c]);
      let b = vec4f(ws[lid.x * 4u][c], ws[lid.x * 4u + 1u][c], ws[lid.x * 4u + 2u][c], ws[lid.x * 4u + 3u][c]);
      for (var i = 0u; i < 4u; i++) {
        acc[i * 4u] += a[i] * b.x; acc[i * 4u + 1u] += a[i] * b.y;
        acc[i * 4u + 2u] += a[i] * b.z; acc[i * 4u + 3u] += a[i] * b.w;
      }
    }
    workgroupBarrier();
  }
  for (var i = 0u; i < 4u; i++) {
    let t = t0 + lid.y * 4u + i;
    for (var j = 0u; j < 4u; j++) {
      let n = n0 + lid.x * 4u + j;
      if (t < p.T && n < p.N) {
        let index = t * p.N + n;
        if (p.accumulate != 0u) { y[index] += acc[i * 4u + j]; } else { y[index] = acc[i * 4u + j]; }
      }
    }
  }
}`,

  // One row (decode): eight outputs per workgroup, 32 invocations per output reading its weight row as
  // consecutive vec4s (K a multiple of 4), then summing their parts in workgroup memory.
  matvec: /* wgsl */ `
struct P { T: u32, N: u32, K: u32, accumulate: u32 }
@group(0) @binding(0) var<uniform> p: P;
@group(0) @binding(1) var<storage, read> x: array<vec4f>;
@group(0) @binding(2) var<storage, read> w: array<vec4f>;
@group(0) @binding(3) var<storage, read_write> y: array<f32>;
var<workgroup> partial: array<f32, 256>;
@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(local_invocation_id) lid: vec3u) {
  let lane = lid.x % 32u;
  let n = (wg.y * 65535u + wg.x) * 8u + lid.x / 32u;
  let k4 = p.K / 4u;
  var sum = 0.0;
  if (n < p.N) {
    for (var k = lane; k < k4; k += 32u) { sum += dot(x[k], w[n * k4 + k]); }
  }
  partial[lid.x] = sum;
  workgroupBarrier();
  for (var stride = 16u; stride > 0u; stride >>= 1u) {
    if (lane < stride) { partial[lid.x] += partial[lid.x + stride]; }
    workgroupBarrier();
  }
  if (lane == 0u && n < p.N) {
    if (p.accumulate != 0u) { y[n] += partial[lid.x]; } else { y[n] = partial[lid.x]; }
  }
}`,

  rope: /* wgsl */ `
struct P { rows: u32, heads: u32, stride: u32, hd: u32, pos0: u32 }
@group(0) @binding(0) var<uniform> p: P;
@group(0) @binding(1) var<storage, read_write> qkv: array<f32>;
@group(0) @binding(2) var<storage, read> cosines: array<f32>;
@group(0) @binding(3) var<storage, read> sines: array<f32>;
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3u) {
  let half = p.hd / 2u;
  let i = gid.x % half;
  let head = (gid.x / half) % p.heads;
  let t = gid.x / (half * p.heads);
  if (t >= p.rows) { return; }
  let at = t * p.stride + head * p.hd + 2u * i;
  let table = (p.pos0 + t) * half + i;
  let a = qkv[at];
  let b = qkv[at + 1u];
  qkv[at] = a * cosines[table] - b * sines[table];
  qkv[at + 1u] = a * sines[table] + b * cosines[table];
}`,

  kvwrite: /* wgsl */ `
struct P { rows: u32, pos0: u32, q: u32, kv_dim: u32, hd: u32, stride: u32, max_tokens: u32 }
@group(0) @binding(0) var<uniform> p: P;
@group(0) @binding(1) var<storage, read> qkv: array<f32>;
@group(0) @binding(2) var<storage, read_write> k: array<f32>;
@group(0) @binding(3) var<storage, read_write> v: array<f32>;
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3u) {
  let t = gid.x / p.kv_dim;
  let e = gid.x % p.kv_dim;
  if (t >= p.rows) { return; }
  let head = e / p.hd;
  let to = (head * p.max_tokens + p.pos0 + t) * p.hd + e % p.hd;
  k[to] = qkv[t * p.stride + p.q + e];
  v[to] = qkv[t * p.stride + p.q + p.kv_dim + e];
}`,

  // Causal grouped-query attention: a workgroup per (query, head); scores of up to 2048 keys in workgroup memory.
  attention: /* wgsl */ `
struct P { rows: u32, pos0: u32, heads: u32, kv_heads: u32, hd: u32, q_dim: u32, stride: u32, max_tokens: u32, scale: f32 }
@group(0) @binding(0) var<uniform> p: P;
@group(0) @binding(1) var<storage, read> qkv: array<f32>;
@group(0) @binding(2) var<storage, read> k: array<f32>;
@group(0) @binding(3) var<storage, read> v: array<f32>;
@group(0) @binding(4) var<storage, read_write> out: array<f32>;
var<workgroup> scores: array<f32, 2048>;
var<workgroup> query: array<f32, 128>;
var<workgroup> partial: array<f32, 64>;
@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(local_invocation_id) lid: vec3u) {
  let t = wg.x;
  let head = wg.y;
  let keys = p.pos0 + t + 1u;
  let base = (head / (p.heads / p.kv_heads)) * p.max_tokens * p.hd;
  for (var i = lid.x; i < p.hd; i += 64u) { query[i] = qkv[t * p.stride + head * p.hd + i] * p.scale; }
  workgroupBarrier();
  var top = -3.4e38;
  for (var j = lid.x; j < keys; j += 64u) {
    var dot = 0.0;
    for (var i = 0u; i < p.hd; i++) { dot += query[i] * k[base + j * p.hd + i]; }
    scores[j] = dot;
    top = max(top, dot);
  }
  partial[lid.x] = top;
  workgroupBarrier();
  for (var stride = 32u; stride > 0u; stride >>= 1u) {
    if (lid.x < stride) { partial[lid.x] = max(partial[lid.x], partial[lid.x + stride]); }
    workgroupBarrier();
  }
  let most = partial[0];
  workgroupBarrier();
  var sum = 0.0;
  for (var j = lid.x; j < keys; j += 64u) {
    let weight = exp(scores[j] - most);
    scores[j] = weight;
    sum += weight;
  }
  partial[lid.x] = sum;
  workgroupBarrier();
  for (var stride = 32u; stride > 0u; stride >>= 1u) {
    if (lid.x < stride) { partial[lid.x] += partial[lid.x + stride]; }
    workgroupBarrier();
  }
  let total = partial[0];
  for (var i = lid.x; i < p.hd; i += 64u) {
    var mixed = 0.0;
    for (var j = 0u; j < keys; j++) { mixed += scores[j] * v[base + j * p.hd + i]; }
    out[t * p.q_dim + head * p.hd + i] = mixed / total;
  }
}`,

  swiglu: /* wgsl */ `
struct P { rows: u32, ff: u32 }
@group(0) @binding(0) var<uniform> p: P;
@group(0) @binding(1) var<storage, read> gate_up: array<f32>;
@group(0) @binding(2) var<storage, read_write> hidden: array<f32>;
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3u) {
  let t = gid.x / p.ff;
  let j = gid.x % p.ff;
  if (t >= p.rows) { return; }
  let g = gate_up[t * 2u * p.ff + j];
  hidden[gid.x] = g / (1.0 + exp(-g)) * gate_up[t * 2u * p.ff + p.ff + j];
}`,

  // The bandwidth ceiling: every invocation sums its share of a large buffer, 16 bytes per read.
  stream: /* wgsl */ `
struct P { n4: u32 }
@group(0) @binding(0) var<uniform> p: P;
@group(0) @binding(1) var<storage, read> data: array<vec4f>;
@group(0) @binding(2) var<storage, read_write> sums: array<f32>;
@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) groups: vec3u) {
  var acc = vec4f(0.0);
  for (var i = gid.x; i < p.n4; i += groups.x * 256u) { acc += data[i]; }
  sums[gid.x] = acc.x + acc.y + acc.z + acc.w;
}`,
};

/** Workgroup memory limits the attention kernel: keys per query and head width. */
export const MAX_ATTENTION_KEYS = 2048;
export const MAX_HEAD_DIM = 128;
