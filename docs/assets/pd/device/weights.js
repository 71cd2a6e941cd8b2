// Seeded weights of the real shapes. Speed does not depend on the values, so they are random — but
// reproducibly so: every value is a hash of (seed, tensor, index), the same in JavaScript, in the WebGPU
// fill shader (ops-webgpu.js) and in the tests' numpy reference (tests/browser/test_device.py).

/** Chris Wellons' lowbias32 integer hash: 32 bits in, 32 well-mixed bits out. */
export function lowbias32(value) {
  let x = value >>> 0;
  x ^= x >>> 16;
  x = Math.imul(x, 0x7feb352d);
  x ^= x >>> 15;
  x = Math.imul(x, 0x846ca68b);
  x ^= x >>> 16;
  return x >>> 0;
}

/** The key of one tensor: tensor 0 is the embedding (tied LM head), layer l's matrices are 1 + 4l + j. */
export function tensorKey(seed, tensor) {
  return lowbias32(Math.imul(seed, 65536) + tensor);
}

/** Value `index` of a tensor: uniform in [-scale, scale), computed exactly in float32 steps. */
export function weightValue(key, index, scale2) {
  const unit = (lowbias32(index ^ key) >>> 8) * 2 ** -24; // [0, 1), exact in float32
  return Math.fround((unit - 0.5) * scale2); // scale2 = fround(2 × scale): one float32 rounding
}

/**
 * Fill `array` with the values of the tensor whose key is `key` (scale: 1 / sqrt(fan-in) for matrices),
 * starting at value `first` of it (a worker fills only its share of a matrix's rows).
 */
export function fillWeights(array, key, scale, first = 0) {
  const scale2 = Math.fround(2 * scale);
  for (let i = 0; i < array.length; i += 1) array[i] = weightValue(key, first + i, scale2);
  return array;
}

/** The tensors of one transformer layer, in the order of simulations/model.py's LayerWeights. */
export function layerTensors(shapes, layer) {
  const { d_model: d, n_heads: h, n_kv_heads: kv, head_dim: hd, d_ff: ff } = shapes;
  const qkv = (h + 2 * kv) * hd;
  return {
    wqkv: { tensor: 1 + 4 * layer, rows: qkv, cols: d },
    wo: { tensor: 2 + 4 * layer, rows: d, cols: h * hd },
    w_gate_up: { tensor: 3 + 4 * layer, rows: 2 * ff, cols: d },
    w_down: { tensor: 4 + 4 * layer, rows: d, cols: ff },
  };
}

/** Scale of a matrix's values: 1 / sqrt(its input width), so activations keep their size layer to layer. */
export function matrixScale(cols) {
  return 1 / Math.sqrt(cols);
}
