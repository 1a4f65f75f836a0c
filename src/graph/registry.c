/* SPDX-License-Identifier: MIT */
/* registry.c - which layer type implements each layer and loss kind of the
 * job file. Both tables come from the lists in job/layer_types.h, so a new
 * layer type needs no line here. */
#include "graph/layer.h"

#include <stddef.h>

/* By enum dt_layer_kind. */
static const struct dt_layer_ops *const layer_table[] = {
#define LAYER_OPS(NAME, word, ...) [DT_LAYER_##NAME] = &dt_layer_##word,
	DT_LAYER_TYPES(LAYER_OPS)
#undef LAYER_OPS
};

/* By enum dt_loss_kind. */
static const struct dt_layer_ops *const loss_table[] = {
#define LOSS_OPS(NAME, word, ops) [DT_LOSS_##NAME] = &dt_layer_##ops,
	DT_LOSS_TYPES(LOSS_OPS)
#undef LOSS_OPS
};

#define N_OF(a) (sizeof(a) / sizeof((a)[0]))

const struct dt_layer_ops *
dt_layer_for_kind(enum dt_layer_kind kind)
{
	if ((unsigned)kind >= N_OF(layer_table))
		return NULL;
	return layer_table[kind];
}

const struct dt_layer_ops *
dt_layer_for_loss(enum dt_loss_kind kind)
{
	if ((unsigned)kind >= N_OF(loss_table))
		return NULL;
	return loss_table[kind];
}
