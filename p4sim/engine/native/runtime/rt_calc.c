/* p4sim native runtime: the hash and checksum algorithms of BMv2 calculations, over bytes
 * (the generated code serialises the calculation's inputs first), as p4sim.engine.hashes. */
#include "p4sim_rt.h"

static uint16_t crc16_table[256];
static uint32_t crc32_table[256];

__attribute__((constructor)) static void calc_tables(void) {
    for (uint32_t b = 0; b < 256; b++) {
        uint32_t c16 = b, c32 = b;
        for (int k = 0; k < 8; k++) {
            c16 = (c16 & 1) ? (c16 >> 1) ^ 0xA001 : c16 >> 1;   /* CRC-16/ARC */
            c32 = (c32 & 1) ? (c32 >> 1) ^ 0xEDB88320u : c32 >> 1; /* CRC-32 (IEEE) */
        }
        crc16_table[b] = (uint16_t)c16;
        crc32_table[b] = c32;
    }
}

uint64_t rt_calc(int algo, const uint8_t *buf, size_t n) {
    switch (algo) {
    case RT_ALGO_CSUM16: {  /* RFC 1071: ones' complement of the ones' complement sum */
        uint64_t sum = 0;
        size_t i = 0;
        for (; i + 1 < n; i += 2) sum += ((uint32_t)buf[i] << 8) | buf[i + 1];
        if (i < n) sum += (uint32_t)buf[i] << 8;
        while (sum >> 16) sum = (sum & 0xFFFF) + (sum >> 16);
        return ~sum & 0xFFFF;
    }
    case RT_ALGO_XOR16: {
        uint32_t acc = 0;
        size_t i = 0;
        for (; i + 1 < n; i += 2) acc ^= ((uint32_t)buf[i] << 8) | buf[i + 1];
        if (i < n) acc ^= (uint32_t)buf[i] << 8;
        return acc;
    }
    case RT_ALGO_CRC16: {
        uint32_t crc = 0;
        for (size_t i = 0; i < n; i++) crc = (crc >> 8) ^ crc16_table[(crc ^ buf[i]) & 0xFF];
        return crc;
    }
    case RT_ALGO_CRC32: {
        uint32_t crc = 0xFFFFFFFFu;
        for (size_t i = 0; i < n; i++) crc = (crc >> 8) ^ crc32_table[(crc ^ buf[i]) & 0xFF];
        return crc ^ 0xFFFFFFFFu;
    }
    case RT_ALGO_IDENTITY:  /* callers use it on at most 8 bytes */
        return rt_get_be(buf, n > 8 ? 8 : (unsigned)n);
    default:
        return 0;
    }
}
