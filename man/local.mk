# SPDX-License-Identifier: MIT
dist_man_MANS += man/dtrain.1 man/dtrain-job.5
