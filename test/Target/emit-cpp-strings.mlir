// Names reach the C++ program byte for byte (issue 18: a NUL cut a name short
// at run time): every byte that is not printable ASCII becomes a three-digit
// octal escape in the string literal, `"` and `\` are escaped, and a `//`
// comment shows such bytes as \xNN (a newline in it would end the comment).
// RUN: ratrain-translate --mt3k-to-cpp %s | FileCheck %s

module {
  mt3k.machine "te\0Ast\\" ddr 1048576 gsm 65536 am 16384 cores 2 dma_channels 2 alignment 64
  mt3k.program @stage0 stage 0 {
    %a = mt3k.buffer "a" at 0 : !mt3k.buffer<ddr, 16xf32>
    // CHECK: ratrain::rt::emit::initParam({{v[0-9]+}}, ratrain::rt::InitKind::Zeros, "nul\000byte", 0.0{{0*}}e+00, 0);
    mt3k.init_param zeros %a "nul\00byte" : !mt3k.buffer<ddr, 16xf32>
    %b = mt3k.buffer "b" at 64 : !mt3k.buffer<ddr, 16xf32>
    // A byte after an escape that looks like an octal digit stays itself.
    // CHECK: "\001\0027 \"q\" \\ \177\303\251 \012\011"
    mt3k.init_param zeros %b "\01\027 \22q\22 \\ \7F\C3\A9 \0A\09" : !mt3k.buffer<ddr, 16xf32>
    // CHECK: ratrain::rt::emit::offload({{v[0-9]+}}, {{v[0-9]+}}, ratrain::rt::StorageTier::Host, "key\000\377");
    %t = mt3k.offload %b to host "key\00\FF" : !mt3k.buffer<ddr, 16xf32>
    mt3k.wait %t
  }
}

// CHECK: /*machine=*/"te\012st\\",
