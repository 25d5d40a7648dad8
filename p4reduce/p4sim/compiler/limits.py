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
