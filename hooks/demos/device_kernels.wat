;; The CPU kernels of the device demo, in WebAssembly text with 128-bit SIMD (f32x4).
;;
;; The build turns this text into two binaries with wasmtime's wat2wasm (hooks/demos/wasm.py): in
;; kernels-relaxed.wasm every MADD a b c (a × b + c) below becomes relaxed-SIMD's fused `f32x4.relaxed_madd`,
;; in kernels-simd.wasm it becomes `f32x4.add (f32x4.mul a b) c` (browsers without relaxed SIMD). The
;; worker loads the first the browser validates. The tests run the same binaries from Python against numpy.
;;
;; Every pointer is a byte offset into the module's own memory, every array float32, row-major.
;; `matmul` needs K to be a multiple of 8; `stream_sum` needs a multiple of 128 bytes.
(module
  (memory (export "memory") 1 65536)

  ;; The four lanes of v added together.
  (func $hsum (param $v v128) (result f32)
    (f32.add
      (f32.add (f32x4.extract_lane 0 (local.get $v)) (f32x4.extract_lane 1 (local.get $v)))
      (f32.add (f32x4.extract_lane 2 (local.get $v)) (f32x4.extract_lane 3 (local.get $v)))))

  ;; Store s at y, or add it to what is there when $acc is 1 (the residual stream).
  (func $put (param $y i32) (param $s f32) (param $acc i32)
    (if (local.get $acc)
      (then (local.set $s (f32.add (local.get $s) (f32.load (local.get $y))))))
    (f32.store (local.get $y) (local.get $s)))

  ;; One dot product of K floats (a row of x with a row of W): the kernel of the leftover rows.
  (func $dot1 (param $x i32) (param $w i32) (param $K i32) (result f32)
    (local $s v128) (local $end i32)
    (local.set $end (i32.add (local.get $x) (i32.shl (local.get $K) (i32.const 2))))
    (block $done
      (loop $k
        (br_if $done (i32.ge_u (local.get $x) (local.get $end)))
        (local.set $s (MADD (v128.load (local.get $x)) (v128.load (local.get $w)) (local.get $s)))
        (local.set $x (i32.add (local.get $x) (i32.const 16)))
        (local.set $w (i32.add (local.get $w) (i32.const 16)))
        (br $k)))
    (call $hsum (local.get $s)))

  ;; Four rows of x against two rows of W: eight dot products, eight accumulators, each load used
  ;; two or four times. Writes y[0..1], y[N..N+1], y[2N..], y[3N..] (ys: N × 4 bytes).
  (func $tile4x2 (param $x0 i32) (param $w0 i32) (param $y i32) (param $K i32) (param $ys i32) (param $acc i32)
    (local $x1 i32) (local $x2 i32) (local $x3 i32) (local $w1 i32) (local $end i32)
    (local $a0 v128) (local $a1 v128) (local $a2 v128) (local $a3 v128) (local $b0 v128) (local $b1 v128)
    (local $c00 v128) (local $c01 v128) (local $c10 v128) (local $c11 v128)
    (local $c20 v128) (local $c21 v128) (local $c30 v128) (local $c31 v128)
    (local.set $x1 (i32.add (local.get $x0) (i32.shl (local.get $K) (i32.const 2))))
    (local.set $x2 (i32.add (local.get $x1) (i32.shl (local.get $K) (i32.const 2))))
    (local.set $x3 (i32.add (local.get $x2) (i32.shl (local.get $K) (i32.const 2))))
    (local.set $w1 (i32.add (local.get $w0) (i32.shl (local.get $K) (i32.const 2))))
    (local.set $end (local.get $x1))
    (block $done
      (loop $k
        (br_if $done (i32.ge_u (local.get $x0) (local.get $end)))
        (local.set $b0 (v128.load (local.get $w0)))
        (local.set $b1 (v128.load (local.get $w1)))
        (local.set $a0 (v128.load (local.get $x0)))
        (local.set $a1 (v128.load (local.get $x1)))
        (local.set $c00 (MADD (local.get $a0) (local.get $b0) (local.get $c00)))
        (local.set $c01 (MADD (local.get $a0) (local.get $b1) (local.get $c01)))
        (local.set $c10 (MADD (local.get $a1) (local.get $b0) (local.get $c10)))
        (local.set $c11 (MADD (local.get $a1) (local.get $b1) (local.get $c11)))
        (local.set $a2 (v128.load (local.get $x2)))
        (local.set $a3 (v128.load (local.get $x3)))
        (local.set $c20 (MADD (local.get $a2) (local.get $b0) (local.get $c20)))
        (local.set $c21 (MADD (local.get $a2) (local.get $b1) (local.get $c21)))
        (local.set $c30 (MADD (local.get $a3) (local.get $b0) (local.get $c30)))
        (local.set $c31 (MADD (local.get $a3) (local.get $b1) (local.get $c31)))
        (local.set $b0 (v128.load offset=16 (local.get $w0)))
        (local.set $b1 (v128.load offset=16 (local.get $w1)))
        (local.set $a0 (v128.load offset=16 (local.get $x0)))
        (local.set $a1 (v128.load offset=16 (local.get $x1)))
        (local.set $c00 (MADD (local.get $a0) (local.get $b0) (local.get $c00)))
        (local.set $c01 (MADD (local.get $a0) (local.get $b1) (local.get $c01)))
        (local.set $c10 (MADD (local.get $a1) (local.get $b0) (local.get $c10)))
        (local.set $c11 (MADD (local.get $a1) (local.get $b1) (local.get $c11)))
        (local.set $a2 (v128.load offset=16 (local.get $x2)))
        (local.set $a3 (v128.load offset=16 (local.get $x3)))
        (local.set $c20 (MADD (local.get $a2) (local.get $b0) (local.get $c20)))
        (local.set $c21 (MADD (local.get $a2) (local.get $b1) (local.get $c21)))
        (local.set $c30 (MADD (local.get $a3) (local.get $b0) (local.get $c30)))
        (local.set $c31 (MADD (local.get $a3) (local.get $b1) (local.get $c31)))
        (local.set $x0 (i32.add (local.get $x0) (i32.const 32)))
        (local.set $x1 (i32.add (local.get $x1) (i32.const 32)))
        (local.set $x2 (i32.add (local.get $x2) (i32.const 32)))
        (local.set $x3 (i32.add (local.get $x3) (i32.const 32)))
        (local.set $w0 (i32.add (local.get $w0) (i32.const 32)))
        (local.set $w1 (i32.add (local.get $w1) (i32.const 32)))
        (br $k)))
    (call $put (local.get $y) (call $hsum (local.get $c00)) (local.get $acc))
    (call $put (i32.add (local.get $y) (i32.const 4)) (call $hsum (local.get $c01)) (local.get $acc))
    (local.set $y (i32.add (local.get $y) (local.get $ys)))
    (call $put (local.get $y) (call $hsum (local.get $c10)) (local.get $acc))
    (call $put (i32.add (local.get $y) (i32.const 4)) (call $hsum (local.get $c11)) (local.get $acc))
    (local.set $y (i32.add (local.get $y) (local.get $ys)))
    (call $put (local.get $y) (call $hsum (local.get $c20)) (local.get $acc))
    (call $put (i32.add (local.get $y) (i32.const 4)) (call $hsum (local.get $c21)) (local.get $acc))
    (local.set $y (i32.add (local.get $y) (local.get $ys)))
    (call $put (local.get $y) (call $hsum (local.get $c30)) (local.get $acc))
    (call $put (i32.add (local.get $y) (i32.const 4)) (call $hsum (local.get $c31)) (local.get $acc)))

  ;; One row of x against four rows of W (decode's matrix-vector product): four weight streams in
  ;; flight, each weight read once. Writes y[0..3].
  (func $tile1x4 (param $x i32) (param $w0 i32) (param $y i32) (param $K i32) (param $acc i32)
    (local $w1 i32) (local $w2 i32) (local $w3 i32) (local $end i32) (local $a v128)
    (local $c0 v128) (local $c1 v128) (local $c2 v128) (local $c3 v128)
    (local.set $w1 (i32.add (local.get $w0) (i32.shl (local.get $K) (i32.const 2))))
    (local.set $w2 (i32.add (local.get $w1) (i32.shl (local.get $K) (i32.const 2))))
    (local.set $w3 (i32.add (local.get $w2) (i32.shl (local.get $K) (i32.const 2))))
    (local.set $end (i32.add (local.get $x) (i32.shl (local.get $K) (i32.const 2))))
    (block $done
      (loop $k
        (br_if $done (i32.ge_u (local.get $x) (local.get $end)))
        (local.set $a (v128.load (local.get $x)))
        (local.set $c0 (MADD (local.get $a) (v128.load (local.get $w0)) (local.get $c0)))
        (local.set $c1 (MADD (local.get $a) (v128.load (local.get $w1)) (local.get $c1)))
        (local.set $c2 (MADD (local.get $a) (v128.load (local.get $w2)) (local.get $c2)))
        (local.set $c3 (MADD (local.get $a) (v128.load (local.get $w3)) (local.get $c3)))
        (local.set $a (v128.load offset=16 (local.get $x)))
        (local.set $c0 (MADD (local.get $a) (v128.load offset=16 (local.get $w0)) (local.get $c0)))
        (local.set $c1 (MADD (local.get $a) (v128.load offset=16 (local.get $w1)) (local.get $c1)))
        (local.set $c2 (MADD (local.get $a) (v128.load offset=16 (local.get $w2)) (local.get $c2)))
        (local.set $c3 (MADD (local.get $a) (v128.load offset=16 (local.get $w3)) (local.get $c3)))
        (local.set $x (i32.add (local.get $x) (i32.const 32)))
        (local.set $w0 (i32.add (local.get $w0) (i32.const 32)))
        (local.set $w1 (i32.add (local.get $w1) (i32.const 32)))
        (local.set $w2 (i32.add (local.get $w2) (i32.const 32)))
        (local.set $w3 (i32.add (local.get $w3) (i32.const 32)))
        (br $k)))
    (call $put (local.get $y) (call $hsum (local.get $c0)) (local.get $acc))
    (call $put (i32.add (local.get $y) (i32.const 4)) (call $hsum (local.get $c1)) (local.get $acc))
    (call $put (i32.add (local.get $y) (i32.const 8)) (call $hsum (local.get $c2)) (local.get $acc))
    (call $put (i32.add (local.get $y) (i32.const 12)) (call $hsum (local.get $c3)) (local.get $acc)))

  ;; y (T, N) = x (T, K) · Wᵀ, W (N, K) as in PyTorch; $acc = 1 adds to y. Blocks of 64 weight rows stay
  ;; in L2 while every input row passes over them; four input rows at a time (T < 4 or the last rows:
  ;; one row against four weight rows).
  (func (export "matmul") (param $x i32) (param $w i32) (param $y i32) (param $T i32) (param $N i32) (param $K i32) (param $acc i32)
    (call $matmul_s (local.get $x) (local.get $w) (local.get $y) (local.get $T) (local.get $N) (local.get $K) (local.get $acc)
                    (i32.shl (local.get $N) (i32.const 2))))

  ;; The same with y's rows $nb bytes apart (y may be a band of columns of a wider matrix).
  (func $matmul_s (param $x i32) (param $w i32) (param $y i32) (param $T i32) (param $N i32) (param $K i32) (param $acc i32) (param $nb i32)
    (local $kb i32) (local $n0 i32) (local $n1 i32) (local $n i32) (local $t i32)
    (local.set $kb (i32.shl (local.get $K) (i32.const 2)))
    (block $blocks_done
      (loop $blocks
        (br_if $blocks_done (i32.ge_u (local.get $n0) (local.get $N)))
        (local.set $n1 (select (i32.add (local.get $n0) (i32.const 64)) (local.get $N)
                               (i32.lt_u (i32.add (local.get $n0) (i32.const 64)) (local.get $N))))
        ;; four rows of x at a time
        (local.set $t (i32.const 0))
        (block $rows4_done
          (loop $rows4
            (br_if $rows4_done (i32.gt_u (i32.add (local.get $t) (i32.const 4)) (local.get $T)))
            (local.set $n (local.get $n0))
            (block $pairs_done
              (loop $pairs
                (br_if $pairs_done (i32.gt_u (i32.add (local.get $n) (i32.const 2)) (local.get $n1)))
                (call $tile4x2
                  (i32.add (local.get $x) (i32.mul (local.get $t) (local.get $kb)))
                  (i32.add (local.get $w) (i32.mul (local.get $n) (local.get $kb)))
                  (i32.add (local.get $y) (i32.add (i32.mul (local.get $t) (local.get $nb)) (i32.shl (local.get $n) (i32.const 2))))
                  (local.get $K) (local.get $nb) (local.get $acc))
                (local.set $n (i32.add (local.get $n) (i32.const 2)))
                (br $pairs)))
            (if (i32.lt_u (local.get $n) (local.get $n1))  ;; an odd weight row left in this block
              (then (call $column4 (local.get $x) (local.get $w) (local.get $y) (local.get $t) (local.get $n)
                                   (local.get $K) (i32.shr_u (local.get $nb) (i32.const 2)) (local.get $acc))))
            (local.set $t (i32.add (local.get $t) (i32.const 4)))
            (br $rows4)))
        ;; the rows left (all of them when T < 4: decode)
        (block $rows1_done
          (loop $rows1
            (br_if $rows1_done (i32.ge_u (local.get $t) (local.get $T)))
            (local.set $n (local.get $n0))
            (block $quads_done
              (loop $quads
                (br_if $quads_done (i32.gt_u (i32.add (local.get $n) (i32.const 4)) (local.get $n1)))
                (call $tile1x4
                  (i32.add (local.get $x) (i32.mul (local.get $t) (local.get $kb)))
                  (i32.add (local.get $w) (i32.mul (local.get $n) (local.get $kb)))
                  (i32.add (local.get $y) (i32.add (i32.mul (local.get $t) (local.get $nb)) (i32.shl (local.get $n) (i32.const 2))))
                  (local.get $K) (local.get $acc))
                (local.set $n (i32.add (local.get $n) (i32.const 4)))
                (br $quads)))
            (block $singles_done
              (loop $singles
                (br_if $singles_done (i32.ge_u (local.get $n) (local.get $n1)))
                (call $put
                  (i32.add (local.get $y) (i32.add (i32.mul (local.get $t) (local.get $nb)) (i32.shl (local.get $n) (i32.const 2))))
                  (call $dot1 (i32.add (local.get $x) (i32.mul (local.get $t) (local.get $kb)))
                              (i32.add (local.get $w) (i32.mul (local.get $n) (local.get $kb))) (local.get $K))
                  (local.get $acc))
                (local.set $n (i32.add (local.get $n) (i32.const 1)))
                (br $singles)))
            (local.set $t (i32.add (local.get $t) (i32.const 1)))
            (br $rows1)))
        (local.set $n0 (local.get $n1))
        (br $blocks))))

  ;; Weight row n against input rows t…t+3 (the odd row of a block).
  (func $column4 (param $x i32) (param $w i32) (param $y i32) (param $t i32) (param $n i32) (param $K i32) (param $N i32) (param $acc i32)
    (local $i i32)
    (block $done
      (loop $rows
        (br_if $done (i32.ge_u (local.get $i) (i32.const 4)))
        (call $put
          (i32.add (local.get $y) (i32.shl (i32.add (i32.mul (i32.add (local.get $t) (local.get $i)) (local.get $N)) (local.get $n)) (i32.const 2)))
          (call $dot1 (i32.add (local.get $x) (i32.shl (i32.mul (i32.add (local.get $t) (local.get $i)) (local.get $K)) (i32.const 2)))
                      (i32.add (local.get $w) (i32.shl (i32.mul (local.get $n) (local.get $K)) (i32.const 2)))
                      (local.get $K))
          (local.get $acc))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $rows))))

  ;; The sum of `bytes` bytes of floats from p, each read once: the streaming-read ceiling (a sum, so
  ;; nothing is written and no store traffic is counted). Its two halves are read side by side, eight
  ;; accumulators in all, so two streams of cache-line misses are in flight at once (about 10% faster
  ;; than one stream on the test machine).
  (func (export "stream_sum") (param $p i32) (param $bytes i32) (result f32)
    (local $q i32) (local $end i32)
    (local $s0 v128) (local $s1 v128) (local $s2 v128) (local $s3 v128)
    (local $s4 v128) (local $s5 v128) (local $s6 v128) (local $s7 v128)
    (local.set $q (i32.add (local.get $p) (i32.shr_u (local.get $bytes) (i32.const 1))))
    (local.set $end (local.get $q))
    (block $done
      (loop $read
        (br_if $done (i32.ge_u (local.get $p) (local.get $end)))
        (local.set $s0 (f32x4.add (local.get $s0) (v128.load (local.get $p))))
        (local.set $s1 (f32x4.add (local.get $s1) (v128.load offset=16 (local.get $p))))
        (local.set $s2 (f32x4.add (local.get $s2) (v128.load offset=32 (local.get $p))))
        (local.set $s3 (f32x4.add (local.get $s3) (v128.load offset=48 (local.get $p))))
        (local.set $s4 (f32x4.add (local.get $s4) (v128.load (local.get $q))))
        (local.set $s5 (f32x4.add (local.get $s5) (v128.load offset=16 (local.get $q))))
        (local.set $s6 (f32x4.add (local.get $s6) (v128.load offset=32 (local.get $q))))
        (local.set $s7 (f32x4.add (local.get $s7) (v128.load offset=48 (local.get $q))))
        (local.set $p (i32.add (local.get $p) (i32.const 64)))
        (local.set $q (i32.add (local.get $q) (i32.const 64)))
        (br $read)))
    (call $hsum (f32x4.add (f32x4.add (f32x4.add (local.get $s0) (local.get $s1)) (f32x4.add (local.get $s2) (local.get $s3)))
                           (f32x4.add (f32x4.add (local.get $s4) (local.get $s5)) (f32x4.add (local.get $s6) (local.get $s7))))))

  ;; e^x in four lanes, for x ≤ 0 (attention's scores less their maximum; below -87 the result is ~0):
  ;; 2^(x·log2 e) as 2^n (written into the exponent bits) times 2^f, f in [0, 1), by its Taylor
  ;; polynomial of degree 7 (relative error under 2e-6). WebAssembly has no exp instruction.
  (func $exp4 (param $x v128) (result v128)
    (local $t v128) (local $n v128) (local $f v128) (local $p v128)
    (local.set $t (f32x4.mul (f32x4.max (local.get $x) (v128.const f32x4 -87 -87 -87 -87))
                             (v128.const f32x4 1.442695041 1.442695041 1.442695041 1.442695041)))
    (local.set $n (f32x4.floor (local.get $t)))
    (local.set $f (f32x4.sub (local.get $t) (local.get $n)))
    (local.set $p (v128.const f32x4 1.525273e-5 1.525273e-5 1.525273e-5 1.525273e-5))
    (local.set $p (MADD (local.get $p) (local.get $f) (v128.const f32x4 1.540353e-4 1.540353e-4 1.540353e-4 1.540353e-4)))
    (local.set $p (MADD (local.get $p) (local.get $f) (v128.const f32x4 1.3333558e-3 1.3333558e-3 1.3333558e-3 1.3333558e-3)))
    (local.set $p (MADD (local.get $p) (local.get $f) (v128.const f32x4 9.6181291e-3 9.6181291e-3 9.6181291e-3 9.6181291e-3)))
    (local.set $p (MADD (local.get $p) (local.get $f) (v128.const f32x4 5.5504109e-2 5.5504109e-2 5.5504109e-2 5.5504109e-2)))
    (local.set $p (MADD (local.get $p) (local.get $f) (v128.const f32x4 0.24022651 0.24022651 0.24022651 0.24022651)))
    (local.set $p (MADD (local.get $p) (local.get $f) (v128.const f32x4 0.69314718 0.69314718 0.69314718 0.69314718)))
    (local.set $p (MADD (local.get $p) (local.get $f) (v128.const f32x4 1 1 1 1)))
    (f32x4.mul (local.get $p)
      (i32x4.shl (i32x4.add (i32x4.trunc_sat_f32x4_s (local.get $n)) (v128.const i32x4 127 127 127 127)) (i32.const 23))))

  ;; Causal grouped-query attention, as simulations.model.attention: for each of the `rows` new tokens
  ;; (positions pos0…) and each query head, softmax(q·kᵀ × scale) over every cached key up to its
  ;; position, times the values. qkv rows are (heads + 2·kv_heads) × hd wide; the caches are
  ;; (kv_heads, max_tokens, hd); out is (rows, heads × hd); scores is scratch of pos0 + rows + 4 floats.
  ;; hd must be a multiple of 16: each pass keeps 16 floats (four vectors) in four accumulators.
  (func (export "attention") (param $qkv i32) (param $kc i32) (param $vc i32) (param $out i32) (param $scores i32)
        (param $rows i32) (param $pos0 i32) (param $heads i32) (param $kvh i32) (param $hd i32) (param $maxT i32) (param $scale f32)
    (local $t i32) (local $h i32) (local $j i32) (local $i i32) (local $keys i32) (local $q i32) (local $kbase i32)
    (local $row i32) (local $o i32) (local $hdb i32) (local $stride i32) (local $sp i32) (local $send i32)
    (local $max f32) (local $sum f32) (local $s f32) (local $w v128) (local $m v128)
    (local $a0 v128) (local $a1 v128) (local $a2 v128) (local $a3 v128)
    (local.set $hdb (i32.shl (local.get $hd) (i32.const 2)))
    (local.set $stride (i32.mul (i32.add (local.get $heads) (i32.shl (local.get $kvh) (i32.const 1))) (local.get $hdb)))
    (block $t_done
      (loop $tokens
        (br_if $t_done (i32.ge_u (local.get $t) (local.get $rows)))
        (local.set $keys (i32.add (i32.add (local.get $pos0) (local.get $t)) (i32.const 1)))
        (local.set $send (i32.add (local.get $scores) (i32.shl (local.get $keys) (i32.const 2))))
        (local.set $h (i32.const 0))
        (block $h_done
          (loop $heads_loop
            (br_if $h_done (i32.ge_u (local.get $h) (local.get $heads)))
            (local.set $q (i32.add (local.get $qkv) (i32.add (i32.mul (local.get $t) (local.get $stride))
                                                               (i32.mul (local.get $h) (local.get $hdb)))))
            ;; this query head's key-value head: h ÷ (heads ÷ kv_heads)
            (local.set $kbase (i32.mul (i32.div_u (local.get $h) (i32.div_u (local.get $heads) (local.get $kvh)))
                                       (i32.mul (local.get $maxT) (local.get $hdb))))
            ;; scores[j] = q · k_j × scale, and their maximum
            (local.set $max (f32.const -inf))
            (local.set $row (i32.add (local.get $kc) (local.get $kbase)))
            (local.set $sp (local.get $scores))
            (block $s_done
              (loop $score
                (br_if $s_done (i32.ge_u (local.get $sp) (local.get $send)))
                (local.set $a0 (f32x4.mul (v128.load (local.get $q)) (v128.load (local.get $row))))
                (local.set $a1 (f32x4.mul (v128.load offset=16 (local.get $q)) (v128.load offset=16 (local.get $row))))
                (local.set $a2 (f32x4.mul (v128.load offset=32 (local.get $q)) (v128.load offset=32 (local.get $row))))
                (local.set $a3 (f32x4.mul (v128.load offset=48 (local.get $q)) (v128.load offset=48 (local.get $row))))
                (local.set $i (i32.const 64))
                (block $d_done
                  (loop $d
                    (br_if $d_done (i32.ge_u (local.get $i) (local.get $hdb)))
                    (local.set $a0 (MADD (v128.load (i32.add (local.get $q) (local.get $i)))
                                         (v128.load (i32.add (local.get $row) (local.get $i))) (local.get $a0)))
                    (local.set $a1 (MADD (v128.load offset=16 (i32.add (local.get $q) (local.get $i)))
                                         (v128.load offset=16 (i32.add (local.get $row) (local.get $i))) (local.get $a1)))
                    (local.set $a2 (MADD (v128.load offset=32 (i32.add (local.get $q) (local.get $i)))
                                         (v128.load offset=32 (i32.add (local.get $row) (local.get $i))) (local.get $a2)))
                    (local.set $a3 (MADD (v128.load offset=48 (i32.add (local.get $q) (local.get $i)))
                                         (v128.load offset=48 (i32.add (local.get $row) (local.get $i))) (local.get $a3)))
                    (local.set $i (i32.add (local.get $i) (i32.const 64)))
                    (br $d)))
                (local.set $s (f32.mul (call $hsum (f32x4.add (f32x4.add (local.get $a0) (local.get $a1))
                                                              (f32x4.add (local.get $a2) (local.get $a3))))
                                       (local.get $scale)))
                (f32.store (local.get $sp) (local.get $s))
                (local.set $max (f32.max (local.get $max) (local.get $s)))
                (local.set $row (i32.add (local.get $row) (local.get $hdb)))
                (local.set $sp (i32.add (local.get $sp) (i32.const 4)))
                (br $score)))
            ;; weights: exp(score − max), four at a time (the scratch has room past the last), and their sum
            (local.set $m (f32x4.splat (local.get $max)))
            (local.set $sp (local.get $scores))
            (block $e_done
              (loop $e
                (br_if $e_done (i32.ge_u (local.get $sp) (local.get $send)))
                (v128.store (local.get $sp) (call $exp4 (f32x4.sub (v128.load (local.get $sp)) (local.get $m))))
                (local.set $sp (i32.add (local.get $sp) (i32.const 16)))
                (br $e)))
            (local.set $sum (f32.const 0))
            (local.set $sp (local.get $scores))
            (block $u_done
              (loop $u
                (br_if $u_done (i32.ge_u (local.get $sp) (local.get $send)))
                (local.set $sum (f32.add (local.get $sum) (f32.load (local.get $sp))))
                (local.set $sp (i32.add (local.get $sp) (i32.const 4)))
                (br $u)))
            ;; out = Σ_j weight_j · v_j ÷ sum, sixteen floats of the head at a time
            (local.set $o (i32.add (local.get $out) (i32.mul (i32.add (i32.mul (local.get $t) (local.get $heads)) (local.get $h))
                                                             (local.get $hdb))))
            (local.set $m (f32x4.splat (f32.div (f32.const 1) (local.get $sum))))
            (local.set $i (i32.const 0))
            (block $c_done
              (loop $chunks
                (br_if $c_done (i32.ge_u (local.get $i) (local.get $hdb)))
                (local.set $a0 (v128.const f32x4 0 0 0 0))
                (local.set $a1 (v128.const f32x4 0 0 0 0))
                (local.set $a2 (v128.const f32x4 0 0 0 0))
                (local.set $a3 (v128.const f32x4 0 0 0 0))
                (local.set $row (i32.add (local.get $vc) (i32.add (local.get $kbase) (local.get $i))))
                (local.set $sp (local.get $scores))
                (block $v_done
                  (loop $values
                    (br_if $v_done (i32.ge_u (local.get $sp) (local.get $send)))
                    (local.set $w (v128.load32_splat (local.get $sp)))
                    (local.set $a0 (MADD (local.get $w) (v128.load (local.get $row)) (local.get $a0)))
                    (local.set $a1 (MADD (local.get $w) (v128.load offset=16 (local.get $row)) (local.get $a1)))
                    (local.set $a2 (MADD (local.get $w) (v128.load offset=32 (local.get $row)) (local.get $a2)))
                    (local.set $a3 (MADD (local.get $w) (v128.load offset=48 (local.get $row)) (local.get $a3)))
                    (local.set $row (i32.add (local.get $row) (local.get $hdb)))
                    (local.set $sp (i32.add (local.get $sp) (i32.const 4)))
                    (br $values)))
                (v128.store (i32.add (local.get $o) (local.get $i)) (f32x4.mul (local.get $a0) (local.get $m)))
                (v128.store offset=16 (i32.add (local.get $o) (local.get $i)) (f32x4.mul (local.get $a1) (local.get $m)))
                (v128.store offset=32 (i32.add (local.get $o) (local.get $i)) (f32x4.mul (local.get $a2) (local.get $m)))
                (v128.store offset=48 (i32.add (local.get $o) (local.get $i)) (f32x4.mul (local.get $a3) (local.get $m)))
                (local.set $i (i32.add (local.get $i) (i32.const 64)))
                (br $chunks)))
            (local.set $h (i32.add (local.get $h) (i32.const 1)))
            (br $heads_loop)))
        (local.set $t (i32.add (local.get $t) (i32.const 1)))
        (br $tokens))))
;; --- the live model: matrices in GGUF's block formats (simulations/quantized.py) ---------------------

  ;; Where the table of every half float's value lies (65,536 floats, `f16_table`); 0 until it is made.
  (global $f16_at (mut i32) (i32.const 0))

  ;; Fill the table at p (256 KB) with every half float's value: a block's scale is then one load.
  (func (export "f16_table") (param $p i32)
    (local $h i32)
    (global.set $f16_at (i32.const 0))
    (block $done
      (loop $all
        (br_if $done (i32.ge_u (local.get $h) (i32.const 65536)))
        (f32.store (i32.add (local.get $p) (i32.shl (local.get $h) (i32.const 2))) (call $f16_bits (local.get $h)))
        (local.set $h (i32.add (local.get $h) (i32.const 1)))
        (br $all)))
    (global.set $f16_at (local.get $p)))

  ;; The IEEE half float at p as an f32 (a block's scale or minimum).
  (func $f16 (param $p i32) (result f32)
    (if (result f32) (global.get $f16_at)
      (then (f32.load (i32.add (global.get $f16_at) (i32.shl (i32.load16_u (local.get $p)) (i32.const 2)))))
      (else (call $f16_bits (i32.load16_u (local.get $p))))))

  ;; The half float whose bits are h as an f32.
  (func $f16_bits (param $h i32) (result f32)
    (local $e i32) (local $m i32) (local $s i32)
    (local.set $s (i32.shl (i32.and (local.get $h) (i32.const 0x8000)) (i32.const 16)))
    (local.set $e (i32.and (i32.shr_u (local.get $h) (i32.const 10)) (i32.const 0x1f)))
    (local.set $m (i32.and (local.get $h) (i32.const 0x3ff)))
    (if (result f32) (i32.eqz (local.get $e))
      (then (f32.copysign (f32.mul (f32.convert_i32_u (local.get $m)) (f32.const 0x1p-24))
                          (f32.reinterpret_i32 (local.get $s))))
      (else (f32.reinterpret_i32
              (i32.or (local.get $s)
                (if (result i32) (i32.eq (local.get $e) (i32.const 31))
                  (then (i32.or (i32.const 0x7f800000) (i32.shl (local.get $m) (i32.const 13))))
                  (else (i32.or (i32.shl (i32.add (local.get $e) (i32.const 112)) (i32.const 23))
                                (i32.shl (local.get $m) (i32.const 13))))))))))

  ;; Four int32 lanes as floats times d plus m.
  (func $scale4 (param $q v128) (param $d v128) (param $m v128) (result v128)
    (MADD (f32x4.convert_i32x4_s (local.get $q)) (local.get $d) (local.get $m)))

  ;; Sixteen signed 8-bit lanes (Q4_1's nibbles, 0-15, read the same) written as 16 floats q·d + m at out.
  (func $put16 (param $v v128) (param $d v128) (param $m v128) (param $out i32)
    (local $lo v128) (local $hi v128)
    (local.set $lo (i16x8.extend_low_i8x16_s (local.get $v)))
    (local.set $hi (i16x8.extend_high_i8x16_s (local.get $v)))
    (v128.store (local.get $out) (call $scale4 (i32x4.extend_low_i16x8_s (local.get $lo)) (local.get $d) (local.get $m)))
    (v128.store offset=16 (local.get $out) (call $scale4 (i32x4.extend_high_i16x8_s (local.get $lo)) (local.get $d) (local.get $m)))
    (v128.store offset=32 (local.get $out) (call $scale4 (i32x4.extend_low_i16x8_s (local.get $hi)) (local.get $d) (local.get $m)))
    (v128.store offset=48 (local.get $out) (call $scale4 (i32x4.extend_high_i16x8_s (local.get $hi)) (local.get $d) (local.get $m))))

  ;; `rows` rows of K weights from w (in format $type: 1 Q8_0, 2 Q4_1) as float32 at out, row after row.
  ;; Q8_0: a block is an f16 scale d and 32 int8 q, weight d·q. Q4_1: f16 d and f16 minimum m, then 16
  ;; bytes whose low nibbles are weights 0-15 and high nibbles 16-31, weight d·q + m.
  (func $dequantize (param $w i32) (param $out i32) (param $n i32) (param $type i32)
    (local $end i32) (local $d v128) (local $v v128)
    (local.set $end (i32.add (local.get $out) (i32.shl (local.get $n) (i32.const 2))))
    (block $done
      (loop $blocks
        (br_if $done (i32.ge_u (local.get $out) (local.get $end)))
        (local.set $d (f32x4.splat (call $f16 (local.get $w))))
        (if (i32.eq (local.get $type) (i32.const 1))
          (then
            (call $put16 (v128.load offset=2 (local.get $w)) (local.get $d) (v128.const f32x4 0 0 0 0) (local.get $out))
            (call $put16 (v128.load offset=18 (local.get $w)) (local.get $d) (v128.const f32x4 0 0 0 0)
                         (i32.add (local.get $out) (i32.const 64)))
            (local.set $w (i32.add (local.get $w) (i32.const 34))))
          (else
            (local.set $v (v128.load offset=4 (local.get $w)))
            (call $put16 (v128.and (local.get $v) (v128.const i8x16 15 15 15 15 15 15 15 15 15 15 15 15 15 15 15 15))
                         (local.get $d) (f32x4.splat (call $f16 (i32.add (local.get $w) (i32.const 2)))) (local.get $out))
            (call $put16 (i8x16.shr_u (local.get $v) (i32.const 4))
                         (local.get $d) (f32x4.splat (call $f16 (i32.add (local.get $w) (i32.const 2))))
                         (i32.add (local.get $out) (i32.const 64)))
            (local.set $w (i32.add (local.get $w) (i32.const 20)))))
        (local.set $out (i32.add (local.get $out) (i32.const 128)))
        (br $blocks))))

  ;; Bytes of one row of K weights in format $type (0 f32, 1 Q8_0, 2 Q4_1).
  (func $row_bytes (param $K i32) (param $type i32) (result i32)
    (if (result i32) (i32.eqz (local.get $type))
      (then (i32.shl (local.get $K) (i32.const 2)))
      (else (i32.mul (i32.shr_u (local.get $K) (i32.const 5))
                     (select (i32.const 34) (i32.const 20) (i32.eq (local.get $type) (i32.const 1)))))))

  ;; y (T, N) = x (T, K) · Wᵀ for W (N, K) stored in format $type (0 f32, 1 Q8_0, 2 Q4_1), y's rows $ys bytes
  ;; apart, $acc = 1 adds to y. A band of weight rows (64 for a prompt, 4 for a token) is dequantized into
  ;; `scratch` (room for 64 × K floats) and multiplied by the float32 kernel while it is in cache, so the
  ;; products equal those of the dequantized matrix (as simulations/quantized.py's reference computes them).
  (func (export "matmul_q") (param $x i32) (param $w i32) (param $y i32) (param $T i32) (param $N i32) (param $K i32)
        (param $acc i32) (param $type i32) (param $ys i32) (param $scratch i32)
    (local $n0 i32) (local $band i32) (local $rows i32) (local $rb i32)
    (if (i32.eqz (local.get $type))
      (then (call $matmul_s (local.get $x) (local.get $w) (local.get $y) (local.get $T) (local.get $N) (local.get $K)
                            (local.get $acc) (local.get $ys))
            (return)))
    (local.set $band (select (i32.const 64) (i32.const 4) (i32.ge_u (local.get $T) (i32.const 4))))
    (local.set $rb (call $row_bytes (local.get $K) (local.get $type)))
    (block $done
      (loop $bands
        (br_if $done (i32.ge_u (local.get $n0) (local.get $N)))
        (local.set $rows (select (local.get $band) (i32.sub (local.get $N) (local.get $n0))
                                 (i32.le_u (i32.add (local.get $n0) (local.get $band)) (local.get $N))))
        (call $dequantize (i32.add (local.get $w) (i32.mul (local.get $n0) (local.get $rb))) (local.get $scratch)
                          (i32.mul (local.get $rows) (local.get $K)) (local.get $type))
        (call $matmul_s (local.get $x) (local.get $scratch) (i32.add (local.get $y) (i32.shl (local.get $n0) (i32.const 2)))
                        (local.get $T) (local.get $rows) (local.get $K) (local.get $acc) (local.get $ys))
        (local.set $n0 (i32.add (local.get $n0) (local.get $rows)))
        (br $bands))))

  ;; Row `row` of a table of K-wide rows in format $type, as float32 at out (an embedding lookup).
  (func (export "dequantize_row") (param $w i32) (param $row i32) (param $K i32) (param $type i32) (param $out i32)
    (local $p i32)
    (local.set $p (i32.add (local.get $w) (i32.mul (local.get $row) (call $row_bytes (local.get $K) (local.get $type)))))
    (if (i32.eqz (local.get $type))
      (then (memory.copy (local.get $out) (local.get $p) (i32.shl (local.get $K) (i32.const 2))))
      (else (call $dequantize (local.get $p) (local.get $out) (local.get $K) (local.get $type)))))
;; --- one token (decode): each weight read once, dequantized in registers ---------------------------

  ;; Σ q_i · x_i over one block of 32 quants held as two vectors of sixteen signed 8-bit lanes (lo: quants 0-15,
  ;; hi: 16-31; Q4_1's nibbles, 0-15, read the same signed or not) against the 32 floats at x. Two accumulators.
  (func $block_dot (param $lo v128) (param $hi v128) (param $x i32) (result v128)
    (local $a v128) (local $b v128) (local $c v128) (local $d v128) (local $s0 v128) (local $s1 v128)
    (local.set $a (i16x8.extend_low_i8x16_s (local.get $lo))) (local.set $b (i16x8.extend_high_i8x16_s (local.get $lo)))
    (local.set $c (i16x8.extend_low_i8x16_s (local.get $hi))) (local.set $d (i16x8.extend_high_i8x16_s (local.get $hi)))
    (local.set $s0 (f32x4.mul (f32x4.convert_i32x4_s (i32x4.extend_low_i16x8_s (local.get $a))) (v128.load (local.get $x))))
    (local.set $s1 (f32x4.mul (f32x4.convert_i32x4_s (i32x4.extend_high_i16x8_s (local.get $a))) (v128.load offset=16 (local.get $x))))
    (local.set $s0 (MADD (f32x4.convert_i32x4_s (i32x4.extend_low_i16x8_s (local.get $b))) (v128.load offset=32 (local.get $x)) (local.get $s0)))
    (local.set $s1 (MADD (f32x4.convert_i32x4_s (i32x4.extend_high_i16x8_s (local.get $b))) (v128.load offset=48 (local.get $x)) (local.get $s1)))
    (local.set $s0 (MADD (f32x4.convert_i32x4_s (i32x4.extend_low_i16x8_s (local.get $c))) (v128.load offset=64 (local.get $x)) (local.get $s0)))
    (local.set $s1 (MADD (f32x4.convert_i32x4_s (i32x4.extend_high_i16x8_s (local.get $c))) (v128.load offset=80 (local.get $x)) (local.get $s1)))
    (local.set $s0 (MADD (f32x4.convert_i32x4_s (i32x4.extend_low_i16x8_s (local.get $d))) (v128.load offset=96 (local.get $x)) (local.get $s0)))
    (local.set $s1 (MADD (f32x4.convert_i32x4_s (i32x4.extend_high_i16x8_s (local.get $d))) (v128.load offset=112 (local.get $x)) (local.get $s1)))
    (f32x4.add (local.get $s0) (local.get $s1)))

  ;; One row of W in format $type (1 Q8_0, 2 Q4_1) times the K floats at x: Σ_blocks d·(q·x) (+ m·Σx for Q4_1,
  ;; the block sums of x at xs). The scales are looked up in the table (`f16_table` must have been called):
  ;; written out here, as a call a block cost as much as the block's products in V8.
  (func $row_dot (param $x i32) (param $xs i32) (param $w i32) (param $K i32) (param $type i32) (result f32)
    (if (result f32) (i32.eq (local.get $type) (i32.const 1))
      (then (call $row_dot_q8_0 (local.get $x) (local.get $w) (local.get $K)))
      (else (call $row_dot_q4_1 (local.get $x) (local.get $xs) (local.get $w) (local.get $K)))))

  ;; A format a loop: one that chose per block ran Q4_1 at a quarter of the speed in V8.
  (func $row_dot_q8_0 (param $x i32) (param $w i32) (param $K i32) (result f32)
    (local $end i32) (local $acc v128)
    (local.set $end (i32.add (local.get $x) (i32.shl (local.get $K) (i32.const 2))))
    (block $done
      (loop $blocks
        (br_if $done (i32.ge_u (local.get $x) (local.get $end)))
        (local.set $acc (MADD (f32x4.splat (f32.load (i32.add (global.get $f16_at) (i32.shl (i32.load16_u (local.get $w)) (i32.const 2)))))
                              (call $block_dot (v128.load offset=2 (local.get $w)) (v128.load offset=18 (local.get $w)) (local.get $x))
                              (local.get $acc)))
        (local.set $w (i32.add (local.get $w) (i32.const 34)))
        (local.set $x (i32.add (local.get $x) (i32.const 128)))
        (br $blocks)))
    (call $hsum (local.get $acc)))

  (func $row_dot_q4_1 (param $x i32) (param $xs i32) (param $w i32) (param $K i32) (result f32)
    (local $end i32) (local $acc v128) (local $v v128) (local $msum f32)
    (local.set $end (i32.add (local.get $x) (i32.shl (local.get $K) (i32.const 2))))
    (block $done
      (loop $blocks
        (br_if $done (i32.ge_u (local.get $x) (local.get $end)))
        (local.set $v (v128.load offset=4 (local.get $w)))
        (local.set $acc (MADD (f32x4.splat (f32.load (i32.add (global.get $f16_at) (i32.shl (i32.load16_u (local.get $w)) (i32.const 2)))))
                              (call $block_dot (v128.and (local.get $v) (v128.const i8x16 15 15 15 15 15 15 15 15 15 15 15 15 15 15 15 15))
                                               (i8x16.shr_u (local.get $v) (i32.const 4)) (local.get $x))
                              (local.get $acc)))
        (local.set $msum (f32.add (local.get $msum)
                                  (f32.mul (f32.load (i32.add (global.get $f16_at) (i32.shl (i32.load16_u offset=2 (local.get $w)) (i32.const 2))))
                                           (f32.load (local.get $xs)))))
        (local.set $xs (i32.add (local.get $xs) (i32.const 4)))
        (local.set $w (i32.add (local.get $w) (i32.const 20)))
        (local.set $x (i32.add (local.get $x) (i32.const 128)))
        (br $blocks)))
    (f32.add (call $hsum (local.get $acc)) (local.get $msum)))

  ;; The sum of each block of 32 floats of the T rows of K at x, into xs (T × K/32 floats).
  (func $block_sums (param $x i32) (param $xs i32) (param $n i32)
    (local $end i32)
    (local.set $end (i32.add (local.get $x) (i32.shl (local.get $n) (i32.const 2))))
    (block $done
      (loop $blocks
        (br_if $done (i32.ge_u (local.get $x) (local.get $end)))
        (f32.store (local.get $xs) (call $hsum (f32x4.add
          (f32x4.add (f32x4.add (v128.load (local.get $x)) (v128.load offset=16 (local.get $x)))
                     (f32x4.add (v128.load offset=32 (local.get $x)) (v128.load offset=48 (local.get $x))))
          (f32x4.add (f32x4.add (v128.load offset=64 (local.get $x)) (v128.load offset=80 (local.get $x)))
                     (f32x4.add (v128.load offset=96 (local.get $x)) (v128.load offset=112 (local.get $x)))))))
        (local.set $x (i32.add (local.get $x) (i32.const 128)))
        (local.set $xs (i32.add (local.get $xs) (i32.const 4)))
        (br $blocks))))

  ;; matmul_q for a few rows (decode): every weight row read once per input row, dequantized in registers.
  ;; Same arguments as matmul_q; scratch holds the block sums of x. Needs the half-float table (f16_table).
  (func (export "matvec_q") (param $x i32) (param $w i32) (param $y i32) (param $T i32) (param $N i32) (param $K i32)
        (param $acc i32) (param $type i32) (param $ys i32) (param $scratch i32)
    (local $t i32) (local $n i32) (local $rb i32) (local $xt i32) (local $xs i32) (local $yt i32)
    (local.set $rb (call $row_bytes (local.get $K) (local.get $type)))
    (call $block_sums (local.get $x) (local.get $scratch) (i32.mul (local.get $T) (local.get $K)))
    (block $t_done
      (loop $rows
        (br_if $t_done (i32.ge_u (local.get $t) (local.get $T)))
        (local.set $xt (i32.add (local.get $x) (i32.shl (i32.mul (local.get $t) (local.get $K)) (i32.const 2))))
        (local.set $xs (i32.add (local.get $scratch) (i32.shl (i32.mul (local.get $t) (i32.shr_u (local.get $K) (i32.const 5))) (i32.const 2))))
        (local.set $yt (i32.add (local.get $y) (i32.mul (local.get $t) (local.get $ys))))
        (local.set $n (i32.const 0))
        (block $n_done
          (loop $outputs
            (br_if $n_done (i32.ge_u (local.get $n) (local.get $N)))
            (call $put (i32.add (local.get $yt) (i32.shl (local.get $n) (i32.const 2)))
                       (call $row_dot (local.get $xt) (local.get $xs) (i32.add (local.get $w) (i32.mul (local.get $n) (local.get $rb)))
                                      (local.get $K) (local.get $type))
                       (local.get $acc))
            (local.set $n (i32.add (local.get $n) (i32.const 1)))
            (br $outputs)))
        (local.set $t (i32.add (local.get $t) (i32.const 1)))
        (br $rows))))

  ;; --- Q4_1 decode in integers (IDOT: relaxed SIMD's i8 × i7 dot product, or its plain-SIMD equivalent) ------
  ;; Each block of 32 of x's elements as 2^e (A + B/256 + C/65536), A, B, C whole numbers in -128..127, the
  ;; nearest to x · 2^-e at 2^-16, with the largest |x| / 2^e in [63.5, 127) (simulations/kernels/block_dot.py's
  ;; digits, the same rounding): Q4_1's nibbles (0-15) times each digit are integer dot products, exact.
  (func $whole4 (param $v v128) (param $s v128) (result v128)
    (i32x4.trunc_sat_f32x4_s (f32x4.nearest (f32x4.mul (local.get $v) (local.get $s)))))

  ;; ((w + 128) & 255) - 128: the nearest 8-bit digit.
  (func $digit4 (param $w v128) (result v128)
    (i32x4.sub (v128.and (i32x4.add (local.get $w) (v128.const i32x4 128 128 128 128))
                         (v128.const i32x4 255 255 255 255))
               (v128.const i32x4 128 128 128 128)))

  (func $pack16 (param $a v128) (param $b v128) (param $c v128) (param $d v128) (result v128)
    (i8x16.narrow_i16x8_s (i16x8.narrow_i32x4_s (local.get $a) (local.get $b))
                          (i16x8.narrow_i32x4_s (local.get $c) (local.get $d))))

  ;; 16 floats at x as digits: A at out, B at out + 32, C at out + 64 (16 bytes each).
  (func $digits16 (param $x i32) (param $s v128) (param $out i32)
    (local $w0 v128) (local $w1 v128) (local $w2 v128) (local $w3 v128)
    (local $c0 v128) (local $c1 v128) (local $c2 v128) (local $c3 v128)
    (local $b0 v128) (local $b1 v128) (local $b2 v128) (local $b3 v128)
    (local.set $w0 (call $whole4 (v128.load (local.get $x)) (local.get $s)))
    (local.set $w1 (call $whole4 (v128.load offset=16 (local.get $x)) (local.get $s)))
    (local.set $w2 (call $whole4 (v128.load offset=32 (local.get $x)) (local.get $s)))
    (local.set $w3 (call $whole4 (v128.load offset=48 (local.get $x)) (local.get $s)))
    (local.set $c0 (call $digit4 (local.get $w0))) (local.set $w0 (i32x4.shr_s (i32x4.sub (local.get $w0) (local.get $c0)) (i32.const 8)))
    (local.set $c1 (call $digit4 (local.get $w1))) (local.set $w1 (i32x4.shr_s (i32x4.sub (local.get $w1) (local.get $c1)) (i32.const 8)))
    (local.set $c2 (call $digit4 (local.get $w2))) (local.set $w2 (i32x4.shr_s (i32x4.sub (local.get $w2) (local.get $c2)) (i32.const 8)))
    (local.set $c3 (call $digit4 (local.get $w3))) (local.set $w3 (i32x4.shr_s (i32x4.sub (local.get $w3) (local.get $c3)) (i32.const 8)))
    (local.set $b0 (call $digit4 (local.get $w0))) (local.set $w0 (i32x4.shr_s (i32x4.sub (local.get $w0) (local.get $b0)) (i32.const 8)))
    (local.set $b1 (call $digit4 (local.get $w1))) (local.set $w1 (i32x4.shr_s (i32x4.sub (local.get $w1) (local.get $b1)) (i32.const 8)))
    (local.set $b2 (call $digit4 (local.get $w2))) (local.set $w2 (i32x4.shr_s (i32x4.sub (local.get $w2) (local.get $b2)) (i32.const 8)))
    (local.set $b3 (call $digit4 (local.get $w3))) (local.set $w3 (i32x4.shr_s (i32x4.sub (local.get $w3) (local.get $b3)) (i32.const 8)))
    (v128.store (local.get $out) (call $pack16 (local.get $w0) (local.get $w1) (local.get $w2) (local.get $w3)))
    (v128.store offset=32 (local.get $out) (call $pack16 (local.get $b0) (local.get $b1) (local.get $b2) (local.get $b3)))
    (v128.store offset=64 (local.get $out) (call $pack16 (local.get $c0) (local.get $c1) (local.get $c2) (local.get $c3))))

  ;; The K floats at x as digits (96 bytes a block, at dig) and each block's 2^e (a float a block, at xsc).
  (func $x_digits (param $x i32) (param $K i32) (param $dig i32) (param $xsc i32)
    (local $end i32) (local $t v128) (local $top i32) (local $e i32) (local $finite i32)
    (local.set $end (i32.add (local.get $x) (i32.shl (local.get $K) (i32.const 2))))
    (block $done
      (loop $blocks
        (br_if $done (i32.ge_u (local.get $x) (local.get $end)))
        (local.set $t (v128.and (v128.load (local.get $x)) (v128.const i32x4 0x7fffffff 0x7fffffff 0x7fffffff 0x7fffffff)))
        (local.set $t (i32x4.max_s (local.get $t) (v128.and (v128.load offset=16 (local.get $x)) (v128.const i32x4 0x7fffffff 0x7fffffff 0x7fffffff 0x7fffffff))))
        (local.set $t (i32x4.max_s (local.get $t) (v128.and (v128.load offset=32 (local.get $x)) (v128.const i32x4 0x7fffffff 0x7fffffff 0x7fffffff 0x7fffffff))))
        (local.set $t (i32x4.max_s (local.get $t) (v128.and (v128.load offset=48 (local.get $x)) (v128.const i32x4 0x7fffffff 0x7fffffff 0x7fffffff 0x7fffffff))))
        (local.set $t (i32x4.max_s (local.get $t) (v128.and (v128.load offset=64 (local.get $x)) (v128.const i32x4 0x7fffffff 0x7fffffff 0x7fffffff 0x7fffffff))))
        (local.set $t (i32x4.max_s (local.get $t) (v128.and (v128.load offset=80 (local.get $x)) (v128.const i32x4 0x7fffffff 0x7fffffff 0x7fffffff 0x7fffffff))))
        (local.set $t (i32x4.max_s (local.get $t) (v128.and (v128.load offset=96 (local.get $x)) (v128.const i32x4 0x7fffffff 0x7fffffff 0x7fffffff 0x7fffffff))))
        (local.set $t (i32x4.max_s (local.get $t) (v128.and (v128.load offset=112 (local.get $x)) (v128.const i32x4 0x7fffffff 0x7fffffff 0x7fffffff 0x7fffffff))))
        (local.set $t (i32x4.max_s (local.get $t) (i8x16.shuffle 8 9 10 11 12 13 14 15 0 1 2 3 4 5 6 7 (local.get $t) (local.get $t))))
        (local.set $t (i32x4.max_s (local.get $t) (i8x16.shuffle 4 5 6 7 0 1 2 3 12 13 14 15 8 9 10 11 (local.get $t) (local.get $t))))
        (local.set $top (i32x4.extract_lane 0 (local.get $t)))
        (local.set $finite (i32.lt_s (local.get $top) (i32.const 0x7f800000)))
        (local.set $e (i32.add (i32.sub (i32.shr_s (local.get $top) (i32.const 23)) (i32.const 133))
                               (i32.ge_u (i32.and (local.get $top) (i32.const 0x7fffff)) (i32.const 0x7e0000))))
        (local.set $e (select (select (local.get $e) (i32.const -100) (i32.gt_s (local.get $e) (i32.const -100)))
                              (i32.const 0) (local.get $finite)))
        ;; 2^(16 - e): x · 2^(16-e) rounds to A·65536 + B·256 + C
        (call $digits16 (local.get $x) (f32x4.splat (f32.reinterpret_i32 (i32.shl (i32.sub (i32.const 143) (local.get $e)) (i32.const 23))))
                        (local.get $dig))
        (call $digits16 (i32.add (local.get $x) (i32.const 64))
                        (f32x4.splat (f32.reinterpret_i32 (i32.shl (i32.sub (i32.const 143) (local.get $e)) (i32.const 23))))
                        (i32.add (local.get $dig) (i32.const 16)))
        ;; 2^e, or NaN for a block holding an infinity or a NaN (its products are then NaN, as in float32)
        (f32.store (local.get $xsc) (select (f32.reinterpret_i32 (i32.shl (i32.add (i32.const 127) (local.get $e)) (i32.const 23)))
                                            (f32.const nan) (local.get $finite)))
        (local.set $x (i32.add (local.get $x) (i32.const 128)))
        (local.set $dig (i32.add (local.get $dig) (i32.const 96)))
        (local.set $xsc (i32.add (local.get $xsc) (i32.const 4)))
        (br $blocks))))

  ;; One Q4_1 row times x's digits: Σ_blocks d · 2^e · (A·q + B·q/256 + C·q/65536) + m · Σx, the three dot
  ;; products one exact integer a lane ((A·q) · 65536 + (B·q) · 256 + C·q: under 2^30), converted once.
  (func $row_dot_q4_1_int (param $dig i32) (param $xsc i32) (param $xs i32) (param $w i32) (param $K i32) (result f32)
    (local $end i32) (local $acc v128) (local $v v128) (local $lo v128) (local $hi v128) (local $msum f32)
    (local $a v128) (local $b v128) (local $c v128)
    (local.set $end (i32.add (local.get $xs) (i32.shl (i32.shr_u (local.get $K) (i32.const 5)) (i32.const 2))))
    (block $done
      (loop $blocks
        (br_if $done (i32.ge_u (local.get $xs) (local.get $end)))
        (local.set $v (v128.load offset=4 (local.get $w)))
        (local.set $lo (v128.and (local.get $v) (v128.const i8x16 15 15 15 15 15 15 15 15 15 15 15 15 15 15 15 15)))
        (local.set $hi (i8x16.shr_u (local.get $v) (i32.const 4)))
        (local.set $a (IDOT (v128.load offset=16 (local.get $dig)) (local.get $hi)
                            (IDOT (v128.load (local.get $dig)) (local.get $lo) (v128.const i32x4 0 0 0 0))))
        (local.set $b (IDOT (v128.load offset=48 (local.get $dig)) (local.get $hi)
                            (IDOT (v128.load offset=32 (local.get $dig)) (local.get $lo) (v128.const i32x4 0 0 0 0))))
        (local.set $c (IDOT (v128.load offset=80 (local.get $dig)) (local.get $hi)
                            (IDOT (v128.load offset=64 (local.get $dig)) (local.get $lo) (v128.const i32x4 0 0 0 0))))
        (local.set $a (i32x4.add (i32x4.add (i32x4.shl (local.get $a) (i32.const 16)) (i32x4.shl (local.get $b) (i32.const 8)))
                                 (local.get $c)))
        (local.set $acc (MADD (f32x4.convert_i32x4_s (local.get $a))
                              (f32x4.splat (f32.mul (f32.load (i32.add (global.get $f16_at) (i32.shl (i32.load16_u (local.get $w)) (i32.const 2))))
                                                    (f32.mul (f32.load (local.get $xsc)) (f32.const 0x1p-16))))
                              (local.get $acc)))
        (local.set $msum (f32.add (local.get $msum)
                                  (f32.mul (f32.load (i32.add (global.get $f16_at) (i32.shl (i32.load16_u offset=2 (local.get $w)) (i32.const 2))))
                                           (f32.load (local.get $xs)))))
        (local.set $xs (i32.add (local.get $xs) (i32.const 4)))
        (local.set $xsc (i32.add (local.get $xsc) (i32.const 4)))
        (local.set $dig (i32.add (local.get $dig) (i32.const 96)))
        (local.set $w (i32.add (local.get $w) (i32.const 20)))
        (br $blocks)))
    (f32.add (call $hsum (local.get $acc)) (local.get $msum)))

  ;; matvec_q for Q4_1 in integers: same arguments but the format; scratch holds, per row of x, its block sums
  ;; (K/32 floats), its block scales 2^e (K/32 floats) and its digits (K/32 · 96 bytes). Needs f16_table.
  (func (export "matvec_q4_1_int") (param $x i32) (param $w i32) (param $y i32) (param $T i32) (param $N i32) (param $K i32)
        (param $acc i32) (param $ys i32) (param $scratch i32)
    (local $t i32) (local $n i32) (local $rb i32) (local $xt i32) (local $xs i32) (local $xsc i32) (local $dig i32) (local $yt i32)
    (local $nb i32)
    (local.set $nb (i32.shr_u (local.get $K) (i32.const 5)))
    (local.set $rb (i32.mul (local.get $nb) (i32.const 20)))
    (local.set $xs (local.get $scratch))
    (local.set $xsc (i32.add (local.get $xs) (i32.shl (local.get $nb) (i32.const 2))))
    (local.set $dig (i32.add (local.get $xsc) (i32.shl (local.get $nb) (i32.const 2))))
    (block $t_done
      (loop $rows
        (br_if $t_done (i32.ge_u (local.get $t) (local.get $T)))
        (local.set $xt (i32.add (local.get $x) (i32.shl (i32.mul (local.get $t) (local.get $K)) (i32.const 2))))
        (call $block_sums (local.get $xt) (local.get $xs) (local.get $K))
        (call $x_digits (local.get $xt) (local.get $K) (local.get $dig) (local.get $xsc))
        (local.set $yt (i32.add (local.get $y) (i32.mul (local.get $t) (local.get $ys))))
        (local.set $n (i32.const 0))
        (block $n_done
          (loop $outputs
            (br_if $n_done (i32.ge_u (local.get $n) (local.get $N)))
            (call $put (i32.add (local.get $yt) (i32.shl (local.get $n) (i32.const 2)))
                       (call $row_dot_q4_1_int (local.get $dig) (local.get $xsc) (local.get $xs)
                                               (i32.add (local.get $w) (i32.mul (local.get $n) (local.get $rb))) (local.get $K))
                       (local.get $acc))
            (local.set $n (i32.add (local.get $n) (i32.const 1)))
            (br $outputs)))
        (local.set $t (i32.add (local.get $t) (i32.const 1)))
        (br $rows))))
)
