# tests/gpu/build.sh - sourced by the GPU scripts (backtraces.sh, gate_noise.sh, launch_variants.sh) from the
# repository root: unpacks .deps/*.deb (when carried to the GPU machine, see DEVICE.md) into /tmp/deps and
# builds cuscope into build-gpu/, then sets C to its cuscope. Needs say() defined; exits 2 on failure.
if [ -d .deps ]; then
	mkdir -p /tmp/deps && for f in .deps/*.deb; do dpkg -x "$f" /tmp/deps; done
	export PKG_CONFIG_SYSROOT_DIR=/tmp/deps PKG_CONFIG_PATH=/tmp/deps/usr/lib/x86_64-linux-gnu/pkgconfig
	export LD_LIBRARY_PATH=/tmp/deps/usr/lib/x86_64-linux-gnu
fi
if [ ! -f build-gpu/build.ninja ]; then
	meson setup build-gpu >/dev/null || { say "meson setup failed"; exit 2; }
fi
ninja -C build-gpu >/dev/null || { say "build failed"; exit 2; }
C=$PWD/build-gpu/cuscope
