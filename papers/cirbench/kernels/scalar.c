/* Loop-free integer scalar kernels (written for this reproduction). */
int sat_add(int a, int b) { long long s = (long long)a + b; if (s > 2147483647LL) return 2147483647; if (s < -2147483647LL - 1) return -2147483647 - 1; return (int)s; }
int clamp3(int x, int lo, int hi) { if (lo > hi) { int t = lo; lo = hi; hi = t; } return x < lo ? lo : (x > hi ? hi : x); }
unsigned popc8(unsigned char v) { unsigned c = v; c = (c & 0x55u) + ((c >> 1) & 0x55u); c = (c & 0x33u) + ((c >> 2) & 0x33u); return (c & 0x0fu) + (c >> 4); }
int abs_diff(int a, int b) { return a > b ? a - b : b - a; }
int max3(int a, int b, int c) { int m = a; if (b > m) m = b; if (c > m) m = c; return m; }
int sign3(int x) { return (x > 0) - (x < 0); }
int classify(int x) { if (x < 0) return 0; if (x == 0) return 1; if (x < 10) return 2; if (x < 100) return 3; return 4; }
int poly3(int x) { return ((3 * x - 5) * x + 7) * x - 11; }
unsigned rotl13(unsigned x) { return (x << 13) | (x >> 19); }
int is_pow2(unsigned x) { return x != 0 && (x & (x - 1)) == 0; }
int avg_floor(int a, int b) { return (a & b) + ((a ^ b) >> 1); }
int mid_of3(int a, int b, int c) { int lo = a < b ? a : b; int hi = a < b ? b : a; return c < lo ? lo : (c > hi ? hi : c); }
unsigned udiv_pow(unsigned x) { return x / 8u + x % 4u; }
int sdiv_round(int x) { return x / 4; }
long long mul_hi_ish(long long a, int b) { return (a * b) >> 7; }
int bit_select(int m, int a, int b) { return (a & m) | (b & ~m); }
