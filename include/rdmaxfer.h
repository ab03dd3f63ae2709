/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* rdmaxfer.h - placeholder until librdmaxfer lands. */
#ifndef RDMAXFER_H
#define RDMAXFER_H
#endif
