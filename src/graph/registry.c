/* registry.c - which layer type implements each layer and loss kind of the
 * job file. Adding a layer type: its file (with its `extern` in layer.h)
 * and one line in a table here. */
#include "graph/layer.h"

#include <stddef.h>

static const struct {
	enum dt_layer_kind kind;
	const struct dt_layer_ops *ops;
} layer_table[] = {
	{ DT_LAYER_DENSE, &dt_layer_dense },
};

static const struct {
	enum dt_loss_kind kind;
	const struct dt_layer_ops *ops;
} loss_table[] = {
	{ DT_LOSS_SOFTMAX_CROSS_ENTROPY, &dt_layer_softmax_xent },
};

#define N_OF(a) (sizeof(a) / sizeof((a)[0]))

const struct dt_layer_ops *
dt_layer_for_kind(enum dt_layer_kind kind)
{
	for (size_t i = 0; i < N_OF(layer_table); i++)
		if (layer_table[i].kind == kind)
			return layer_table[i].ops;
	return NULL;
}

const struct dt_layer_ops *
dt_layer_for_loss(enum dt_loss_kind kind)
{
	for (size_t i = 0; i < N_OF(loss_table); i++)
		if (loss_table[i].kind == kind)
			return loss_table[i].ops;
	return NULL;
}
