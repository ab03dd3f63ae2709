// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/* regcachectl.c - placeholder */
int main(void) { return 0; }
