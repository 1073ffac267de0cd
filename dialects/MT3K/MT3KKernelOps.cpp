//===- MT3KKernelOps.cpp - mt3k kernel verifiers --------------------------===//
//
// Verifiers of the kernel calls (MT3KKernelOps.td). Single-operand rules
// (ranks, element types) are ODS constraints; this file checks the rules that
// relate several operands and attributes, and that outputs do not overlap
// inputs except where an op allows it.
//
//===----------------------------------------------------------------------===//

#include "MT3K/MT3KOps.h"

#include "llvm/ADT/STLExtras.h"

#include <cmath>

using namespace mlir;
using namespace ratrain::mt3k;

/// `[a, b, c]`
static std::string formatShape(ArrayRef<int64_t> shape) {
  std::string text = "[";
  llvm::raw_string_ostream os(text);
  llvm::interleaveComma(shape, os);
  os << "]";
  return text;
}

static BufferType bufferType(Value value) {
  return llvm::cast<BufferType>(value.getType());
}

namespace {
/// A named kernel operand, for the overlap check.
struct NamedOperand {
  Value value;
  StringRef name;
};
} // namespace

/// Kernels do not work in place unless documented: no output may overlap an
/// input (except the identical range, where `mayAlias` allows it) or another
/// output. Ranges are resolved through views to absolute offsets.
static LogicalResult verifyNoOverlap(Operation *op,
                                     ArrayRef<NamedOperand> outputs,
                                     ArrayRef<NamedOperand> inputs,
                                     bool mayAlias) {
  auto check = [&](const NamedOperand &output, const NamedOperand &other,
                   bool exactIsFine) -> LogicalResult {
    std::optional<MemoryRange> a = resolveMemoryRange(output.value);
    std::optional<MemoryRange> b = resolveMemoryRange(other.value);
    if (!a || !b || !a->overlaps(*b))
      return success();
    if (exactIsFine && a->sameBytes(*b))
      return success();
    return op->emitOpError("'")
           << output.name << "' overlaps '" << other.name
           << "': " << stringifyMemorySpace(a->space) << " bytes [" << a->begin
           << ", " << a->end << ") and [" << b->begin << ", " << b->end << ")";
  };
  for (auto [index, output] : llvm::enumerate(outputs)) {
    for (const NamedOperand &input : inputs)
      if (failed(check(output, input, mayAlias)))
        return failure();
    for (const NamedOperand &other : outputs.drop_front(index + 1))
      if (failed(check(output, other, /*exactIsFine=*/false)))
        return failure();
  }
  return success();
}

/// Fails unless `value` has the shape of `reference`.
static LogicalResult expectSameShape(Operation *op, Value value, StringRef name,
                                     Value reference, StringRef referenceName) {
  ArrayRef<int64_t> shape = bufferType(value).getShape();
  ArrayRef<int64_t> expected = bufferType(reference).getShape();
  if (shape != expected)
    return op->emitOpError("'")
           << name << "' must have the shape of '" << referenceName << "', got "
           << formatShape(shape) << " and " << formatShape(expected);
  return success();
}

/// Fails unless `value` has the type (shape and element type) of `reference`.
static LogicalResult expectSameType(Operation *op, Value value, StringRef name,
                                    Value reference, StringRef referenceName) {
  if (value.getType() != reference.getType())
    return op->emitOpError("'")
           << name << "' must have the type of '" << referenceName << "', got "
           << value.getType() << " and " << reference.getType();
  return success();
}

LogicalResult GemmOp::verify() {
  BufferType a = getA().getType(), b = getB().getType(), c = getC().getType();
  if (a.getElementType() != b.getElementType())
    return emitOpError("a and b must have the same element type, got ")
           << a.getElementType() << " and " << b.getElementType();
  if (!c.getElementType().isF32() && c.getElementType() != a.getElementType())
    return emitOpError("c must hold f32 or the element type of a and b, got ")
           << c.getElementType();
  int64_t m = a.getShape()[getTransposeA() ? 1 : 0];
  int64_t ka = a.getShape()[getTransposeA() ? 0 : 1];
  int64_t kb = b.getShape()[getTransposeB() ? 1 : 0];
  int64_t n = b.getShape()[getTransposeB() ? 0 : 1];
  if (ka != kb)
    return emitOpError("contraction dimensions disagree: op(a) is ")
           << m << "x" << ka << ", op(b) is " << kb << "x" << n;
  if (c.getShape()[0] != m || c.getShape()[1] != n)
    return emitOpError("c is ")
           << formatShape(c.getShape()) << ", expected " << formatShape({m, n});
  return verifyNoOverlap(*this, {{getC(), "c"}}, {{getA(), "a"}, {getB(), "b"}},
                         /*mayAlias=*/false);
}

/// Checks the operands shared by attention forward and backward.
static LogicalResult verifyAttention(Operation *op, Value qValue, Value kValue,
                                     Value vValue, Value oValue, Value lseValue,
                                     bool causal) {
  BufferType q = bufferType(qValue), k = bufferType(kValue),
             v = bufferType(vValue), o = bufferType(oValue),
             lse = bufferType(lseValue);
  if (k.getElementType() != q.getElementType() ||
      v.getElementType() != q.getElementType() ||
      o.getElementType() != q.getElementType())
    return op->emitOpError("q, k, v and o must share one element type");
  if (k.getShape() != v.getShape())
    return op->emitOpError("k and v must have the same shape, got ")
           << formatShape(k.getShape()) << " and " << formatShape(v.getShape());
  // [batch, seq, heads, head_dim]
  ArrayRef<int64_t> qs = q.getShape(), ks = k.getShape();
  if (qs[0] != ks[0] || qs[3] != ks[3])
    return op->emitOpError("q and k disagree on batch size or head dim: q is ")
           << formatShape(qs) << ", k is " << formatShape(ks);
  if (qs[2] % ks[2] != 0)
    return op->emitOpError("query heads (")
           << qs[2] << ") must be a multiple of key/value heads (" << ks[2]
           << ")";
  if (causal && qs[1] != ks[1])
    return op->emitOpError(
               "causal attention needs equal query and key lengths, got ")
           << qs[1] << " and " << ks[1];
  if (failed(expectSameShape(op, oValue, "o", qValue, "q")))
    return failure();
  SmallVector<int64_t> lseShape = {qs[0], qs[2], qs[1]};
  if (lse.getShape() != ArrayRef<int64_t>(lseShape))
    return op->emitOpError("lse must be [batch, heads, seq] = ")
           << formatShape(lseShape) << ", got " << formatShape(lse.getShape());
  return success();
}

LogicalResult AttentionFwdOp::verify() {
  if (failed(verifyAttention(*this, getQ(), getK(), getV(), getO(), getLse(),
                             getCausal())))
    return failure();
  return verifyNoOverlap(*this, {{getO(), "o"}, {getLse(), "lse"}},
                         {{getQ(), "q"}, {getK(), "k"}, {getV(), "v"}},
                         /*mayAlias=*/false);
}

LogicalResult AttentionBwdOp::verify() {
  if (failed(verifyAttention(*this, getQ(), getK(), getV(), getO(), getLse(),
                             getCausal())) ||
      failed(expectSameType(*this, getDO(), "d_o", getO(), "o")) ||
      failed(expectSameType(*this, getDq(), "dq", getQ(), "q")) ||
      failed(expectSameType(*this, getDk(), "dk", getK(), "k")) ||
      failed(expectSameType(*this, getDv(), "dv", getV(), "v")))
    return failure();
  return verifyNoOverlap(*this,
                         {{getDq(), "dq"}, {getDk(), "dk"}, {getDv(), "dv"}},
                         {{getQ(), "q"},
                          {getK(), "k"},
                          {getV(), "v"},
                          {getO(), "o"},
                          {getDO(), "d_o"},
                          {getLse(), "lse"}},
                         /*mayAlias=*/false);
}

/// Checks x [tokens, hidden], weight [hidden], rstd [tokens].
static LogicalResult verifyRMSNorm(Operation *op, Value xValue,
                                   Value weightValue, Value rstdValue) {
  ArrayRef<int64_t> x = bufferType(xValue).getShape();
  int64_t weight = bufferType(weightValue).getShape()[0];
  int64_t rstd = bufferType(rstdValue).getShape()[0];
  if (weight != x[1])
    return op->emitOpError("weight has ")
           << weight << " elements, expected the hidden size " << x[1]
           << " of x";
  if (rstd != x[0])
    return op->emitOpError("rstd has ")
           << rstd << " elements, expected the row count " << x[0] << " of x";
  return success();
}

LogicalResult RMSNormFwdOp::verify() {
  if (failed(verifyRMSNorm(*this, getX(), getWeight(), getRstd())) ||
      failed(expectSameShape(*this, getY(), "y", getX(), "x")))
    return failure();
  // Row-wise: y may be x itself; rstd is separate.
  if (failed(verifyNoOverlap(*this, {{getY(), "y"}}, {{getX(), "x"}},
                             /*mayAlias=*/true)))
    return failure();
  return verifyNoOverlap(*this, {{getY(), "y"}, {getRstd(), "rstd"}},
                         {{getWeight(), "weight"}}, /*mayAlias=*/false);
}

LogicalResult RMSNormBwdOp::verify() {
  if (failed(verifyRMSNorm(*this, getX(), getWeight(), getRstd())) ||
      failed(expectSameShape(*this, getDy(), "dy", getX(), "x")) ||
      failed(expectSameShape(*this, getDx(), "dx", getX(), "x")) ||
      failed(expectSameShape(*this, getDweight(), "dweight", getWeight(),
                             "weight")))
    return failure();
  // dx may be dy itself; nothing else overlaps.
  if (failed(verifyNoOverlap(*this, {{getDx(), "dx"}}, {{getDy(), "dy"}},
                             /*mayAlias=*/true)))
    return failure();
  return verifyNoOverlap(
      *this, {{getDx(), "dx"}, {getDweight(), "dweight"}},
      {{getX(), "x"}, {getWeight(), "weight"}, {getRstd(), "rstd"}},
      /*mayAlias=*/false);
}

namespace {
/// The operand counts of one elementwise kind.
struct ElementwiseArity {
  unsigned inputs, outputs;
};
} // namespace

static ElementwiseArity getArity(ElementwiseKind kind) {
  switch (kind) {
  case ElementwiseKind::swiglu:
  case ElementwiseKind::residual_add:
  case ElementwiseKind::embedding:
  case ElementwiseKind::embedding_bwd:
  case ElementwiseKind::cross_entropy:
  case ElementwiseKind::cross_entropy_bwd:
    return {2, 1};
  case ElementwiseKind::swiglu_bwd:
    return {3, 2};
  case ElementwiseKind::rope:
  case ElementwiseKind::rope_bwd:
  case ElementwiseKind::cast:
  case ElementwiseKind::scale:
    return {1, 1};
  }
  return {0, 0};
}

/// Whether `value` is a rank-1 buffer of i32 (token ids or labels).
static bool isTokenIds(Value value) {
  BufferType type = bufferType(value);
  return type.getRank() == 1 && type.getElementType().isInteger(32);
}

LogicalResult ElementwiseOp::verifyKindRules() {
  ElementwiseKind kind = getKind();
  StringRef name = stringifyElementwiseKind(kind);
  ElementwiseArity arity = getArity(kind);
  if (getInputs().size() != arity.inputs ||
      getOutputs().size() != arity.outputs)
    return emitOpError("'")
           << name << "' takes " << arity.inputs << " inputs and "
           << arity.outputs << " outputs, got " << getInputs().size() << " and "
           << getOutputs().size();

  bool isRope =
      kind == ElementwiseKind::rope || kind == ElementwiseKind::rope_bwd;
  if (isRope && !getTheta())
    return emitOpError("'") << name << "' needs a 'theta'";
  if (!isRope && getTheta())
    return emitOpError("'theta' only applies to rope and rope_bwd");
  if (!isRope && getRopeScaling())
    return emitOpError("'rope_scaling' only applies to rope and rope_bwd");
  if (kind == ElementwiseKind::scale && !getScale())
    return emitOpError("'scale' needs a 'scale' factor");
  if (kind != ElementwiseKind::scale &&
      kind != ElementwiseKind::cross_entropy_bwd && getScale())
    return emitOpError("'scale' only applies to scale and cross_entropy_bwd");

  SmallVector<Value> operands(getInputs());
  llvm::append_range(operands, getOutputs());
  switch (kind) {
  case ElementwiseKind::swiglu:
  case ElementwiseKind::swiglu_bwd:
  case ElementwiseKind::residual_add:
  case ElementwiseKind::rope:
  case ElementwiseKind::rope_bwd:
  case ElementwiseKind::scale: {
    for (Value operand : operands)
      if (operand.getType() != operands.front().getType())
        return emitOpError("'")
               << name << "' operands must all have the same type, got "
               << operands.front().getType() << " and " << operand.getType();
    if (!llvm::isa<FloatType>(bufferType(operands.front()).getElementType()))
      return emitOpError("'") << name << "' needs floating-point buffers";
    if (isRope) {
      BufferType type = bufferType(operands.front());
      if (type.getRank() != 4 || type.getShape()[3] % 2 != 0)
        return emitOpError("'")
               << name
               << "' operates on [batch, seq, heads, head_dim] buffers with "
                  "an even head_dim, got "
               << formatShape(type.getShape());
    }
    return success();
  }
  case ElementwiseKind::cast:
    if (bufferType(operands[0]).getShape() !=
        bufferType(operands[1]).getShape())
      return emitOpError("'cast' input and output must have the same shape");
    return success();
  case ElementwiseKind::embedding:
  case ElementwiseKind::embedding_bwd: {
    bool forward = kind == ElementwiseKind::embedding;
    Value table = forward ? operands[0] : operands[2];
    Value ids = forward ? operands[1] : operands[0];
    Value activations = forward ? operands[2] : operands[1];
    if (!isTokenIds(ids))
      return emitOpError("'")
             << name << "' token ids must be a rank-1 i32 buffer";
    ArrayRef<int64_t> tableShape = bufferType(table).getShape();
    ArrayRef<int64_t> actShape = bufferType(activations).getShape();
    int64_t tokens = bufferType(ids).getShape()[0];
    if (tableShape.size() != 2 || actShape.size() != 2 ||
        actShape[0] != tokens || actShape[1] != tableShape[1])
      return emitOpError("'")
             << name
             << "' expects a table [vocab, hidden] and activations [tokens, "
                "hidden] for ids [tokens], got table "
             << formatShape(tableShape) << ", activations "
             << formatShape(actShape) << ", ids [" << tokens << "]";
    return success();
  }
  case ElementwiseKind::cross_entropy:
  case ElementwiseKind::cross_entropy_bwd: {
    Value logits = operands[0], labels = operands[1], result = operands[2];
    if (!isTokenIds(labels))
      return emitOpError("'")
             << name << "' token ids must be a rank-1 i32 buffer";
    ArrayRef<int64_t> logitsShape = bufferType(logits).getShape();
    int64_t tokens = bufferType(labels).getShape()[0];
    if (logitsShape.size() != 2 || logitsShape[0] != tokens)
      return emitOpError("'")
             << name << "' expects logits [tokens, vocab] for labels [tokens], "
             << "got logits " << formatShape(logitsShape) << ", labels ["
             << tokens << "]";
    if (kind == ElementwiseKind::cross_entropy) {
      BufferType loss = bufferType(result);
      if (loss.getRank() != 0 || !loss.getElementType().isF32())
        return emitOpError("'cross_entropy' loss must be a rank-0 f32 buffer");
      return success();
    }
    return expectSameShape(*this, result, "dlogits", logits, "logits");
  }
  }
  return success();
}

LogicalResult ElementwiseOp::verify() {
  if (failed(verifyKindRules()))
    return failure();
  // Pointwise kinds may write an output over an input of the same range.
  ElementwiseKind kind = getKind();
  bool pointwise = kind != ElementwiseKind::embedding &&
                   kind != ElementwiseKind::embedding_bwd &&
                   kind != ElementwiseKind::cross_entropy;
  SmallVector<std::string> names;
  for (unsigned i = 0, e = getInputs().size(); i < e; ++i)
    names.push_back("input #" + std::to_string(i));
  for (unsigned i = 0, e = getOutputs().size(); i < e; ++i)
    names.push_back("output #" + std::to_string(i));
  SmallVector<NamedOperand> inputs, outputs;
  for (auto [index, value] : llvm::enumerate(getInputs()))
    inputs.push_back({value, names[index]});
  for (auto [index, value] : llvm::enumerate(getOutputs()))
    outputs.push_back({value, names[getInputs().size() + index]});
  return verifyNoOverlap(*this, outputs, inputs, pointwise);
}

LogicalResult AdamWOp::verify() {
  int64_t elements = getGrad().getType().getNumElements();
  // Named arrays: a braced list in the loop header would die before the loop.
  Value buffers[] = {getMaster(), getM(), getV(), getView()};
  StringRef names[] = {"master", "m", "v", "view"};
  for (auto [value, name] : llvm::zip_equal(buffers, names)) {
    int64_t count = bufferType(value).getNumElements();
    if (count != elements)
      return emitOpError("'")
             << name << "' has " << count << " elements, expected " << elements
             << " like 'grad'";
  }
  double lr = getLr().convertToDouble(), beta1 = getBeta1().convertToDouble(),
         beta2 = getBeta2().convertToDouble(), eps = getEps().convertToDouble(),
         decay = getWeightDecay().convertToDouble();
  if (!(lr >= 0 && beta1 >= 0 && beta1 < 1 && beta2 >= 0 && beta2 < 1 &&
        eps > 0 && decay >= 0))
    return emitOpError("hyper-parameters out of range: need lr >= 0, "
                       "0 <= beta1, beta2 < 1, eps > 0, weight_decay >= 0");
  if (std::optional<ArrayRef<int64_t>> ranges = getNoDecay()) {
    if (ranges->size() % 2)
      return emitOpError("no_decay needs [begin, end) pairs, got ")
             << ranges->size() << " numbers";
    int64_t previousEnd = 0;
    for (size_t i = 0; i < ranges->size(); i += 2) {
      int64_t begin = (*ranges)[i], end = (*ranges)[i + 1];
      if (begin < previousEnd || end <= begin)
        return emitOpError("no_decay ranges must be non-empty, ascending and "
                           "disjoint, got [")
               << begin << ", " << end << ") after end " << previousEnd;
      previousEnd = end;
    }
    if (*getFirstElement() < 0 ||
        (getShardElements() && *getShardElements() < 1))
      return emitOpError("first_element must be >= 0 and shard_elements >= 1");
  }
  if (bool(getClip()) != bool(getMaxGradNorm()))
    return emitOpError("'clip' and 'max_grad_norm' go together");
  if (bool(getOwn()) != bool(getMembers()))
    return emitOpError("'own' and 'members' go together");
  if (Value own = getOwn()) {
    if (own.getType() != getGrad().getType())
      return emitOpError("'own' must have the type of 'grad' (")
             << getGrad().getType() << "), got " << own.getType();
    if (*getMembers() < 2)
      return emitOpError("'members' must be at least 2, got ") << *getMembers();
    if (getClip())
      return emitOpError("'own' cannot go with 'clip': the norm is taken of "
                         "the averaged gradient");
  }
  if (getMaxGradNorm() && !(getMaxGradNorm()->convertToDouble() > 0 &&
                            std::isfinite(getMaxGradNorm()->convertToDouble())))
    return emitOpError("max_grad_norm must be a finite number > 0, got ")
           << getMaxGradNorm()->convertToDouble();
  // An FP32 model's view may be its master itself (updated in place): the
  // identical range and type.
  SmallVector<NamedOperand, 4> outputs = {
      {getMaster(), "master"}, {getM(), "m"}, {getV(), "v"}};
  std::optional<MemoryRange> master = resolveMemoryRange(getMaster());
  std::optional<MemoryRange> view = resolveMemoryRange(getView());
  bool viewIsMaster = getView().getType() == getMaster().getType() && master &&
                      view && master->sameBytes(*view);
  if (!viewIsMaster)
    outputs.push_back({getView(), "view"});
  SmallVector<NamedOperand, 2> inputs = {{getGrad(), "grad"}};
  if (getOwn())
    inputs.push_back({getOwn(), "own"});
  return verifyNoOverlap(*this, outputs, inputs, /*mayAlias=*/false);
}

LogicalResult SumSquaresOp::verify() {
  double weight = getWeight().convertToDouble();
  if (!(weight > 0 && weight <= 1))
    return emitOpError("weight must be in (0, 1], got ") << weight;
  return success();
}

LogicalResult InitParamOp::verify() {
  bool normal = getKind() == InitKind::normal;
  if (normal && !getStd())
    return emitOpError("'normal' initialization needs a 'std'");
  if (!normal && getStd())
    return emitOpError("'std' only applies to normal initialization");
  if (getStd() && !(getStd()->convertToDouble() > 0))
    return emitOpError("'std' must be positive");
  return success();
}
