/*
 * gpu_links.h - the PCIe links of the host's NVIDIA GPUs: what `cuscope record` stores in the
 * trace's META gpu_links, and the bandwidth the analysis reads back from it (the most that a copy
 * between host and device can move per second, a hardware fact: pageable-memcpy's cost).
 */
#ifndef CUSCOPE_GPU_LINKS_H
#define CUSCOPE_GPU_LINKS_H

/*
 * The links of the GPUs that the NVIDIA driver lists under PROC/driver/nvidia/gpus (one directory
 * per PCI bus id, its "information" file naming the GPU's UUID), each with its current link speed
 * and width from SYS/bus/pci/devices/BUS/: a JSON array [{"uuid", "bus", "gts", "width"}],
 * malloc'd; NULL when none can be read (no driver, a container without /proc/driver/nvidia).
 * proc_root and sys_root: "/proc" and "/sys" but in tests.
 */
char *cs_gpu_links_read(const char *proc_root, const char *sys_root);

/*
 * Bytes per second the PCIe link of the GPU with this UUID moves at most, from a gpu_links value:
 * transfers per second x lanes x the line code's payload (128b/130b from 8 GT/s, 8b/10b below) / 8;
 * 0 when the value is missing, malformed or does not name the GPU.
 */
double cs_gpu_link_bytes_per_s(const char *links_json, const char *uuid);

#endif
