/* WireTokenCheck (docs/protocol.md sections 5 and 10): a contribution must carry its job's
 * wire token, the 32-bit secret the controller installed with the job (set_job's `wire_token`) and
 * handed only to the job's authenticated members. It runs after Admission has found the job and the
 * worker, so a host that passes the address, port and rank checks (a spoofer behind a shared port,
 * where the source guard cannot look) still cannot add to the job's sums without the wire token. */
#ifndef P4REDUCE_WIRE_TOKEN_CHECK_P4
#define P4REDUCE_WIRE_TOKEN_CHECK_P4
#include <core.p4>
#include "headers.p4"
#include "metadata.p4"

control WireTokenCheck(in p4r_t p4r, in job_t job, out bool bad_wire_token) {
    apply {
        bad_wire_token = p4r.wire_token != job.wire_token;
    }
}

#endif
