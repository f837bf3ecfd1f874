# source: Minerallka/cudnn-missed-files-for-cuda-11.4@55a96dcb5213adbd86da8c9361cf820c576bea4c include/cudnn_version.h (cuDNN 8.2.1); NVIDIA's licence comment at the top omitted, the rest verbatim
# ---
/**
 * \file: The master cuDNN version file.
 */

#ifndef CUDNN_VERSION_H_
#define CUDNN_VERSION_H_

#define CUDNN_MAJOR 8
#define CUDNN_MINOR 2
#define CUDNN_PATCHLEVEL 1

#define CUDNN_VERSION (CUDNN_MAJOR * 1000 + CUDNN_MINOR * 100 + CUDNN_PATCHLEVEL)

#endif /* CUDNN_VERSION_H */
