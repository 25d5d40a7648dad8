/* The Python module around wloop.c: p4reduce.worker._wloop.
 *
 * The loop itself is called through ctypes (worker/native_loop.py loads this module's own file);
 * the module exists so that pip builds and installs the loop like any compiled extension, and it
 * carries the wire constants it was compiled with (wloop_wire.h), which native_loop.py compares
 * with the protocol's before using it.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "wloop_wire.h"

static struct PyModuleDef wloop_module = {
    PyModuleDef_HEAD_INIT, "_wloop",
    "The worker's aggregation loop in C (wloop.c), driven through ctypes by p4reduce.worker.native_loop.",
    -1, NULL,
};

PyMODINIT_FUNC PyInit__wloop(void) {
    PyObject *m = PyModule_Create(&wloop_module);
    if (m == NULL) return NULL;
#define WL_ADD(name) \
    if (PyModule_AddIntConstant(m, #name, (long)(name)) < 0) { Py_DECREF(m); return NULL; }
    WL_WIRE_CONSTANTS(WL_ADD)
#undef WL_ADD
    return m;
}
