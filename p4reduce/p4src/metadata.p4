/* What the pipeline's stages hand each other (their in/out parameters), and the little metadata
 * that ingress leaves for egress. One struct per producing stage; docs/protocol.md section 5 is
 * the state machine these values carry through. */
#ifndef P4REDUCE_METADATA_P4
#define P4REDUCE_METADATA_P4
#include "headers.p4"

typedef bit<MAX_WORKERS> worker_set_t;     /* bit r = rank r */

/* Admission: the packet's job, from the jobs table (set_job) */
struct job_t {
    bit<32> slot_base;          /* the job's first slot */
    bit<16> slot_count;
    bit<8>  num_workers;
    bit<16> mcast_grp;          /* the job's multicast group: one replica per worker */
    bit<8>  mode;               /* MODE_DENSE or MODE_SPARSE */
    bit<32> wire_token;         /* the job's wire token (WireTokenCheck, Result) */
    /* the job's tree (table tree): a round completes after `children` contributions, and a
     * switch with a parent sends it the round's partial sum as one worker of rank up_rank */
    bit<8>  children;           /* num_workers unless the tree says otherwise */
    bool    has_parent;         /* aggregate_child: this switch is an interior node */
    bit<9>  up_port;            /* the port towards the parent; its results arrive there */
    bit<8>  up_rank;            /* this switch's rank at the parent */
    bit<32> up_ip;              /* this switch's own address: the partial sum's IPv4 source */
    bit<48> up_src_mac;
    bit<48> up_dst_mac;
}

/* Admission: the sending worker, from the workers table (set_rank) */
struct worker_t {
    bit<8> rank;
    bit<9> port;                /* the switch port the worker's packets must arrive on */
}

/* Slots: what this contribution does to the round of its slot copy */
struct round_t {
    bit<32>     index;          /* register index of the slot copy: 2 * (slot_base + slot) + ver */
    bool        first;          /* the contribution opens the round */
    bool        last;           /* the contribution completes the round: multicast the result */
    bool        resend;         /* a retransmission into a completed round: unicast its result */
    bool        have_result;    /* resend: the copy holds the result from the parent (tree child) */
    sb_bitmap_t stored;         /* sub-blocks the lane registers hold for the round so far */
    sb_bitmap_t union_bitmap;   /* sub-blocks of the round's result, this packet included */
    bit<32>     offset;         /* the round's block offset */
}

/* ExponentNext: the round's merged exponent and next offset */
struct exp_next_t {
    bit<32> min_next;           /* minimum of the contributions' next_offset */
    bit<8>  max_exp;            /* maximum of the contributions' exponent */
}

/* Ingress -> egress */
struct metadata_t {
    bit<2> result;              /* RESULT_NONE, RESULT_MULTICAST or RESULT_UNICAST */
    bool   flooded;             /* a flooded copy: never sent back out of its ingress port */
}

#endif
