/* p4sim core library: the declarations every P4_16 program sees (P4_16 spec, "core library").
   Written for p4sim-compile; type parameters are named Tp_* so the pre-scan knows them. */
#ifndef P4SIM_CORE_P4
#define P4SIM_CORE_P4

error {
    NoError,
    PacketTooShort,
    NoMatch,
    StackOutOfBounds,
    HeaderTooShort,
    ParserTimeout,
    ParserInvalidArgument
}

extern packet_in {
    void extract<Tp_H>(out Tp_H hdr);
    Tp_T lookahead<Tp_T>();
    void advance(in bit<32> sizeInBits);
    bit<32> length();
}

extern packet_out {
    void emit<Tp_H>(in Tp_H hdr);
}

extern void verify(in bool check, in error toSignal);

@noWarn("unused")
action NoAction() {}

match_kind {
    exact,
    ternary,
    lpm
}

#endif
