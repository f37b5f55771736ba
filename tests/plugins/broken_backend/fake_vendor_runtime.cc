// Stands in for a vendor's runtime library; the backend tests deploy the backend without it.
extern "C" __attribute__((visibility("default"))) int kiln_fake_vendor_runtime_init() { return 0; }
