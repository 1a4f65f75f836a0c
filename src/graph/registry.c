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
	{ DT_LAYER_CONV2D, &dt_layer_conv2d },
	{ DT_LAYER_MAXPOOL2D, &dt_layer_maxpool2d },
	{ DT_LAYER_AVGPOOL2D, &dt_layer_avgpool2d },
	{ DT_LAYER_FLATTEN, &dt_layer_flatten },
	{ DT_LAYER_RESHAPE, &dt_layer_reshape },
	{ DT_LAYER_DROPOUT, &dt_layer_dropout },
	{ DT_LAYER_ACTIVATION, &dt_layer_activation },
	{ DT_LAYER_SOFTMAX, &dt_layer_softmax },
	{ DT_LAYER_ADD, &dt_layer_add },
	{ DT_LAYER_CONCAT, &dt_layer_concat },
	{ DT_LAYER_LAYERNORM, &dt_layer_layernorm },
	{ DT_LAYER_BATCHNORM, &dt_layer_batchnorm },
	{ DT_LAYER_EMBEDDING, &dt_layer_embedding },
	{ DT_LAYER_POS_EMBEDDING, &dt_layer_pos_embedding },
	{ DT_LAYER_ATTENTION, &dt_layer_attention },
};

static const struct {
	enum dt_loss_kind kind;
	const struct dt_layer_ops *ops;
} loss_table[] = {
	{ DT_LOSS_SOFTMAX_CROSS_ENTROPY, &dt_layer_softmax_xent },
	{ DT_LOSS_MSE, &dt_layer_mse },
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
