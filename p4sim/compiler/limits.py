"""The limits p4sim-compile enforces, as p4c and BMv2 have them, so that no input can make the
compiler (or the switch that loads its JSON) run out of time or memory."""

# p4c rejects wider bit<N>/int<N> types ("Compiler only supports widths up to 2048"); integer
# constants, sized or not, are held to the same number of bits
MAX_WIDTH = 2048

# v1model's register, counter and meter constructors take their size as bit<32>; table sizes go
# into the P4Info's int64 and BMv2's size_t, but p4c reads them as 32-bit
MAX_SIZE = (1 << 32) - 1

# BMv2 allocates every element of a header stack as a header instance of its own
MAX_STACK_SIZE = 4096

# nesting of expressions and statements (a + b + c ... counts one level per operator): the
# checker and the backends walk the tree recursively, on a thread with a stack sized for this
MAX_DEPTH = 1000

# The preprocessed program (cpp's output): p4src/p4reduce.p4 is 34 KB at 256 lanes, 63 KB at
# 2048. cpp is stopped as soon as its output passes this (a macro that doubles itself 22 times
# expands to 12 MB; cpp itself needs about 100 bytes of memory per byte it writes).
MAX_PREPROCESSED_BYTES = 2 << 20
# cpp's own address space and CPU time (ulimit -v in KiB, -t in seconds), and the wall clock
CPP_MEMORY_KIB = 768 << 10
CPP_CPU_SECONDS = 30
CPP_WALL_SECONDS = 60.0

# Tokens of the preprocessed program, counted before lark sees it: the parser and the tree
# builder need about 30 us and 2 KB per token (p4reduce.p4: 8,000 tokens at 256 lanes, 20,000
# at 2048), so this bounds a parse to a few seconds and a few hundred MB.
MAX_TOKENS = 200_000
