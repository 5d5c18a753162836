// Package visibility reads the GPU visibility variables the way the vendor
// runtimes read them, and maps each runtime ordinal to the physical device it
// is, without calling any runtime.
//
// Parsing needs no device: ParseCUDA reads CUDA_VISIBLE_DEVICES as the CUDA
// driver does, ParseROCm reads ROCR_VISIBLE_DEVICES as ROCr does and
// HIP_VISIBLE_DEVICES, CUDA_VISIBLE_DEVICES and GPU_DEVICE_ORDINAL as HIP's
// runtime (ROCclr) does. A Spec keeps the entries that stand, in order, and
// says why the list ended early; an unset variable (every device) and a set
// but empty one (no device) are different Specs. Map, MIGRule.Map and MapROCm
// then resolve a Spec against the host's devices, as NVML or the KFD topology
// describe them, into Entries: ordinal, physical device (and MIG device) and
// the entry that chose it. OrderDiffersFromPCI says when those ordinals are
// not nvidia-smi's order on a host of mixed models.
//
// Each rule cites its source in a comment. The vendors' own documents come
// first; where NVIDIA documents nothing (the CUDA driver is closed), the rules
// are PyTorch's model of the driver (torch/cuda/__init__.py), which PyTorch
// checked against driver 525.60.13 (pytorch/pytorch#92315). The ROCm rules are
// read from ROCr's and ROCclr's source. What no source confirms is marked
// "unconfirmed" where it is modelled. MIG.md has the MIG enumeration table.
package visibility
