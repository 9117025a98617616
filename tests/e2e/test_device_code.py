"""The binary embeds device code for every configured architecture, holding
our kernels. The embedded images are ELF files of machine type EM_CUDA (190)
whose e_flags carry the SM version in bits 8-15 and whose .text.<kernel>
sections name the kernels; no CUDA tool is needed to read them."""
import os
import re
import struct
import unittest

EM_CUDA = 190
KERNELS = ("gemm_naive", "gemm_tiled", "gemm_blocked", "gemm_tensor", "gemm_mma", "sum_squares", "multiply_add")


def cuda_images(data):
    """(sm, [section names]) of every 64-bit little-endian EM_CUDA ELF inside `data`."""
    out = []
    i = data.find(b"\x7fELF")
    while i >= 0:
        if data[i + 4] == 2 and data[i + 5] == 1 and struct.unpack_from("<H", data, i + 18)[0] == EM_CUDA:
            flags = struct.unpack_from("<I", data, i + 48)[0]
            shoff = struct.unpack_from("<Q", data, i + 40)[0]
            shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, i + 58)

            def section(k):
                return struct.unpack_from("<IIQQQQIIQQ", data, i + shoff + k * shentsize)

            strings = i + section(shstrndx)[4]
            names = []
            for k in range(shnum):
                start = strings + section(k)[0]
                names.append(data[start:data.find(b"\0", start)].decode(errors="replace"))
            out.append(((flags >> 8) & 0xFF, names))
        i = data.find(b"\x7fELF", i + 1)
    return out


class DeviceCode(unittest.TestCase):
    def test_every_architecture_holds_our_kernels(self):
        with open(os.environ["GPUSCALE_BIN"], "rb") as f:
            images = cuda_images(f.read())
        self.assertTrue(images, "no EM_CUDA images in the binary")
        wanted = sorted(int(a) for a in re.findall(r"\d+", os.environ["GPUSCALE_CUDA_ARCHS"]))
        for sm in wanted:
            texts = " ".join(n for arch, names in images if arch == sm for n in names if n.startswith(".text."))
            for kernel in KERNELS:
                self.assertIn(kernel, texts, f"sm_{sm} has no {kernel}")


if __name__ == "__main__":
    unittest.main(verbosity=2)
