"""LLVM IR helpers for the kernels numba's own loops left short of memory's speed.

Used through numba's `intrinsic` (its documented way to emit LLVM IR inside a compiled function) by the float32
micro-kernels, the GGUF blocks' dot products and both attentions. Vectors of any width unless named.
"""

from __future__ import annotations

from llvmlite import ir
from numba.core import cgutils

from .tuning import EXP2_POLYNOMIAL, LOG2_E, TILE_LANES

I8, I32, F32 = ir.IntType(8), ir.IntType(32), ir.FloatType()
TILE = ir.VectorType(F32, TILE_LANES)  # one vector of floats as wide as the CPU's


def splat(builder, value, vector):
    """A broadcast: `value` in every lane of the vector type."""
    lanes = builder.insert_element(ir.Constant(vector, ir.Undefined), value, ir.Constant(I32, 0))
    return builder.shuffle_vector(lanes, ir.Constant(vector, ir.Undefined),
                                  ir.Constant(ir.VectorType(I32, vector.count), [0] * vector.count))


def fmuladd(builder, a, b, c):
    """a·b + c, fused where the CPU can."""
    function = cgutils.get_or_insert_function(builder.module, ir.FunctionType(a.type, [a.type] * 3),
                                              f"llvm.fmuladd.v{a.type.count}f32")
    return builder.call(function, [a, b, c])


def load(builder, base, offset, vector, align=1):
    """A vector load at base + offset elements (a number or a value)."""
    pointer = builder.gep(base, [offset if isinstance(offset, ir.Value) else ir.Constant(I32, offset)])
    return builder.load(builder.bitcast(pointer, vector.as_pointer()), align=align)


def address(context, builder, array_type, value, indices):
    """The array value's struct, and a pointer to its element at `indices` (no bounds check, no wraparound)."""
    array = context.make_array(array_type)(context, builder, value)
    return array, cgutils.get_item_pointer2(
        context, builder, data=array.data, shape=cgutils.unpack_tuple(builder, array.shape),
        strides=cgutils.unpack_tuple(builder, array.strides), layout=array_type.layout, inds=indices,
        wraparound=False, boundscheck=False)


def prefetch(builder, pointer, locality=3):
    """A software prefetch of the line at `pointer` (a hint: it never faults); locality 3 keeps it in every cache
    level, 2 from the L2 out."""
    function = cgutils.get_or_insert_function(
        builder.module, ir.FunctionType(ir.VoidType(), [I8.as_pointer(), I32, I32, I32]), "llvm.prefetch.p0i8")
    builder.call(function, [pointer, ir.Constant(I32, 0), ir.Constant(I32, locality), ir.Constant(I32, 1)])


def fmax(builder, x, y):
    """max, as the CPU's max instruction (which passes y on where x is NaN)."""
    return builder.select(builder.fcmp_ordered(">", x, y), x, y)


def halves(builder, pointer):
    """TILE_LANES f16 values at `pointer`, as float32."""
    return builder.fpext(builder.load(builder.bitcast(pointer, ir.VectorType(ir.HalfType(), TILE_LANES).as_pointer()),
                                      align=1), TILE)


def exp(builder, x):
    """exp of a float32 vector, as `pointwise._exp_parts` computes it (its polynomial and its clamps):
    exp(-inf) = 0, exp(0) = 1."""
    vector, lanes = x.type, x.type.count
    words = ir.VectorType(I32, lanes)

    def each(value):
        return ir.Constant(vector, [value] * lanes)

    t = builder.fmul(x, each(LOG2_E))
    t = builder.select(builder.fcmp_ordered("<", t, each(-127.5)), each(-127.5), t)
    t = builder.select(builder.fcmp_ordered(">", t, each(127.49)), each(127.49), t)
    biased = builder.fptosi(builder.fadd(t, each(127.5)), words)  # n + 127, t + 127.5 >= 0: truncation is the floor
    f = builder.fsub(t, builder.sitofp(builder.sub(biased, ir.Constant(words, [127] * lanes)), vector))
    p = each(EXP2_POLYNOMIAL[0])
    for coefficient in EXP2_POLYNOMIAL[1:]:
        p = fmuladd(builder, p, f, each(coefficient))
    return builder.fmul(p, builder.bitcast(builder.shl(biased, ir.Constant(words, [23] * lanes)), vector))


def reduce(builder, vectors, combine):
    """Vectors -> one float: all their lanes combined by combine(a, b) of two vectors, halving the lanes (a
    horizontal reduction)."""
    total = vectors[0]
    for vector in vectors[1:]:
        total = combine(total, vector)
    lanes = total.type.count
    undefined = ir.Constant(total.type, ir.Undefined)
    while lanes > 1:
        lanes //= 2
        upper = [lanes + i for i in range(lanes)] + [0] * (total.type.count - lanes)
        total = combine(total, builder.shuffle_vector(total, undefined, ir.Constant(ir.VectorType(I32, total.type.count), upper)))
    return builder.extract_element(total, ir.Constant(I32, 0))


def transpose_sums(builder, vectors):
    """Vectors of partial sums, vector j all key j's -> one vector whose lane j is vector j's total (a transposing
    horizontal add): a tree that adds two vectors' halves at each level (two shuffles and an add), so a level's
    vectors each hold twice as many keys in half as many lanes; then one shuffle puts the keys in order."""
    width = vectors[0].type.count
    indices = lambda values: ir.Constant(ir.VectorType(I32, width), values)  # noqa: E731
    level = [(vector, [j]) for j, vector in enumerate(vectors)]  # a vector, and the key of each of its runs of lanes
    while len(level) > 1:
        merged = []
        for (a, a_keys), (b, b_keys) in zip(level[0::2], level[1::2], strict=True):
            run = width // len(a_keys)
            half = run // 2
            low, high, keys = [], [], []
            for i in range(len(a_keys)):  # each run's halves: a's first, then b's (b's lanes are width + ...)
                low += [i * run + lane for lane in range(half)] + [width + i * run + lane for lane in range(half)]
                high += [i * run + half + lane for lane in range(half)] + [width + i * run + half + lane for lane in range(half)]
                keys += [a_keys[i], b_keys[i]]
            merged.append((builder.fadd(builder.shuffle_vector(a, b, indices(low)), builder.shuffle_vector(a, b, indices(high))),
                           keys))
        level = merged
    vector, keys = level[0]
    return builder.shuffle_vector(vector, ir.Constant(vector.type, ir.Undefined), indices([keys.index(j) for j in range(width)]))
