//===- MT3KTypes.td - mt3k types ---------------------------*- tablegen -*-===//
//
// Buffers in a memory space, and asynchronous completion tokens.
//
//===----------------------------------------------------------------------===//

#ifndef RATRAIN_MT3K_TYPES_TD
#define RATRAIN_MT3K_TYPES_TD

include "MT3K/MT3KAttrs.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/BuiltinTypeInterfaces.td"

class MT3K_Type<string name, string typeMnemonic, list<Trait> traits = []>
    : TypeDef<MT3K_Dialect, name, traits> {
  let mnemonic = typeMnemonic;
}

def MT3K_BufferType : MT3K_Type<"Buffer", "buffer"> {
  let summary = "a statically shaped buffer in one memory space";
  let description = [{
    A dense, row-major, statically shaped array of `elementType` placed in
    memory space `space` (`ddr`, `gsm` or `am`). A buffer value is a
    reference to memory, not a value: operations read and write through it.

    Element types: `f32`, `f16`, `bf16` (tensors), `i32` (token ids,
    labels), `i64` and `i8` (raw bytes). Every dimension is positive; a
    rank-0 buffer holds one element (a loss, a scalar).

    ```mlir
    !mt3k.buffer<ddr, 4096x4096xbf16>   // a 32 MiB weight in DDR
    !mt3k.buffer<gsm, 128x4096xbf16>    // a 1 MiB tile staged in GSM
    !mt3k.buffer<am, 64x64xf32>         // a per-core tile in every core's AM
    !mt3k.buffer<ddr, f32>              // a scalar
    ```
  }];
  let parameters = (ins "::ratrain::mt3k::MemorySpace":$space,
                        ArrayRefParameter<"int64_t", "dimensions">:$shape,
                        "::mlir::Type":$elementType);
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let builders = [
    TypeBuilderWithInferredContext<(ins "::ratrain::mt3k::MemorySpace":$space,
                                        "::llvm::ArrayRef<int64_t>":$shape,
                                        "::mlir::Type":$elementType), [{
      return $_get(elementType.getContext(), space, shape, elementType);
    }]>
  ];
  let extraClassDeclaration = [{
    /// The number of dimensions.
    int64_t getRank() const { return getShape().size(); }
    /// The number of elements (1 for a rank-0 buffer).
    int64_t getNumElements() const;
    /// The size of one element in bytes.
    int64_t getElementSizeInBytes() const;
    /// The size of the whole buffer in bytes.
    int64_t getSizeInBytes() const {
      return getNumElements() * getElementSizeInBytes();
    }
    /// This type with another memory space.
    BufferType withSpace(::ratrain::mt3k::MemorySpace space) const {
      return get(space, getShape(), getElementType());
    }
    /// Whether `type` is an element type a buffer may hold.
    static bool isValidElementType(::mlir::Type type);
  }];
}

def MT3K_TokenType : MT3K_Type<"Token", "token"> {
  let summary = "completion token of an asynchronous operation";
  let description = [{
    Yielded by `mt3k.dma` and by every communication operation; consumed by
    exactly one `mt3k.wait`. Until then, the memory the asynchronous
    operation writes must not be touched, and the memory it reads must not
    be written.
  }];
}

//===----------------------------------------------------------------------===//
// Type constraints
//===----------------------------------------------------------------------===//

def MT3K_AnyBuffer
    : Type<CPred<"::llvm::isa<::ratrain::mt3k::BufferType>($_self)">,
           "mt3k buffer", "::ratrain::mt3k::BufferType">;

/// A predicate on a value known to be an mt3k buffer: `cond` is a call on it.
class MT3K_BufferPred<string cond>
    : CPred<"::llvm::cast<::ratrain::mt3k::BufferType>($_self)." # cond>;

def MT3K_IsFloat : CPred<"::llvm::isa<::mlir::FloatType>("
    "::llvm::cast<::ratrain::mt3k::BufferType>($_self).getElementType())">;
def MT3K_IsF32 : MT3K_BufferPred<"getElementType().isF32()">;
def MT3K_IsI32 : MT3K_BufferPred<"getElementType().isInteger(32)">;
def MT3K_InDdr
    : MT3K_BufferPred<"getSpace() == ::ratrain::mt3k::MemorySpace::ddr">;
class MT3K_HasRank<int rank> : MT3K_BufferPred<"getRank() == " # rank>;

/// An mt3k buffer that satisfies all of `preds`.
class MT3K_BufferWith<list<Pred> preds, string description>
    : Type<And<!listconcat([MT3K_AnyBuffer.predicate], preds)>, description,
           "::ratrain::mt3k::BufferType">;

def MT3K_FloatBuffer : MT3K_BufferWith<[MT3K_IsFloat], "mt3k buffer of floats">;
def MT3K_F32Buffer : MT3K_BufferWith<[MT3K_IsF32], "mt3k buffer of f32">;
class MT3K_FloatBufferOfRank<int rank>
    : MT3K_BufferWith<[MT3K_IsFloat, MT3K_HasRank<rank>],
                      "rank-" # rank # " mt3k buffer of floats">;
class MT3K_F32BufferOfRank<int rank>
    : MT3K_BufferWith<[MT3K_IsF32, MT3K_HasRank<rank>],
                      "rank-" # rank # " mt3k buffer of f32">;

/// Network transfers read and write DDR (the NIC reaches only DDR).
def MT3K_DdrBuffer : MT3K_BufferWith<[MT3K_InDdr], "mt3k buffer in ddr">;
def MT3K_DdrI32Buffer : MT3K_BufferWith<[MT3K_InDdr, MT3K_IsI32],
                                        "mt3k buffer of i32 in ddr">;
def MT3K_DdrF32Scalar
    : MT3K_BufferWith<[MT3K_InDdr, MT3K_IsF32, MT3K_HasRank<0>],
                      "rank-0 mt3k buffer of f32 in ddr">;

#endif // RATRAIN_MT3K_TYPES_TD
