/* SPDX-License-Identifier: MIT */
/* loader.c - the prefetching loader thread (see loader.h). A ring of
 * slots; the producer fills slot (head % n), the consumer empties slot
 * (tail % n), a mutex and two condition variables hand them over. */
#include "train/loader.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "train/progress.h"
#include "util/alloc.h"

struct dt_loader {
	struct dt_loader_cfg cfg;
	pthread_t thread;
	int started;
	pthread_mutex_t mu;
	pthread_cond_t filled, emptied;
	struct dt_batch *slots;
	int64_t n_slots;
	int64_t head, tail;	/* produced, consumed */
	int stop;
	double wait_s;
	/* Producer state. */
	int64_t *perm, perm_epoch, epoch, off, k;	/* perm: (src->n) */
	int64_t step;
};

static void
produce(struct dt_loader *l, struct dt_batch *b)
{
	const struct dt_loader_cfg *c = &l->cfg;
	int64_t start;

	if (l->k == 0 && l->off + c->global_batch > c->src->n) {
		l->epoch++;
		l->off = 0;
	}
	if (l->perm_epoch != l->epoch) {
		dt_shuffle(c->seed, l->epoch, c->src->n, l->perm);
		l->perm_epoch = l->epoch;
	}
	if (l->k == 0) {
		struct dt_source_walk w = {
			.global_batch = c->global_batch,
			.micro_batch = c->micro_batch,
			.grad_accum_steps = c->grad_accum_steps,
			.dp_rank = c->dp_rank, .dp_size = c->dp_size,
		};

		dt_source_ahead(c->src, l->perm, l->off,
				c->total_steps - l->step, &w);
	}
	start = l->off + dt_shard_offset(0, c->global_batch, c->dp_rank,
					 c->dp_size, c->micro_batch, l->k);
	dt_source_gather(c->src, l->perm + start, c->micro_batch, b->x, b->y);
	b->epoch = l->epoch;
	b->first_sample = l->epoch * c->src->n + start;
	if (++l->k == c->grad_accum_steps) {
		l->k = 0;
		l->off += c->global_batch;
		l->step++;
	}
}

static void *
run(void *arg)
{
	struct dt_loader *l = arg;

	pthread_mutex_lock(&l->mu);
	for (;;) {
		/* Nothing past the run's last step: its windows would be
		 * read (URL shards downloaded) for no step. */
		while (!l->stop && (l->head - l->tail == l->n_slots ||
				    (l->cfg.total_steps > 0 &&
				     l->step >= l->cfg.total_steps)))
			pthread_cond_wait(&l->emptied, &l->mu);
		if (l->stop)
			break;
		pthread_mutex_unlock(&l->mu);
		/* The slot is the producer's alone until head moves. */
		produce(l, &l->slots[l->head % l->n_slots]);
		pthread_mutex_lock(&l->mu);
		l->head++;
		pthread_cond_signal(&l->filled);
	}
	pthread_mutex_unlock(&l->mu);
	return NULL;
}

struct dt_loader *
dt_loader_new(const struct dt_loader_cfg *cfg)
{
	struct dt_loader *l = dt_xcalloc(1, sizeof *l);
	const struct dt_batch_source *s = cfg->src;

	l->cfg = *cfg;
	l->n_slots = (cfg->depth > 0 ? cfg->depth : 1) * cfg->grad_accum_steps;
	l->slots = dt_xcalloc((size_t)l->n_slots, sizeof *l->slots);
	for (int64_t i = 0; i < l->n_slots; i++) {
		l->slots[i].x = dt_xalloc_floats((size_t)(cfg->micro_batch *
							  s->x_size));
		l->slots[i].y = dt_xmalloc((size_t)(cfg->micro_batch *
						    s->y_size),
					   sizeof(int32_t));
	}
	l->perm = dt_xmalloc((size_t)s->n, sizeof *l->perm);
	l->perm_epoch = -1;
	l->epoch = cfg->epoch;
	l->off = cfg->epoch_off;
	l->step = cfg->step;
	pthread_mutex_init(&l->mu, NULL);
	pthread_cond_init(&l->filled, NULL);
	pthread_cond_init(&l->emptied, NULL);
	if (pthread_create(&l->thread, NULL, run, l) != 0) {
		dt_loader_free(l);
		return NULL;
	}
	l->started = 1;
	return l;
}

const struct dt_batch *
dt_loader_next(struct dt_loader *l)
{
	double t0 = dt_now();

	pthread_mutex_lock(&l->mu);
	while (l->head == l->tail)
		pthread_cond_wait(&l->filled, &l->mu);
	pthread_mutex_unlock(&l->mu);
	l->wait_s += dt_now() - t0;
	return &l->slots[l->tail % l->n_slots];
}

void
dt_loader_release(struct dt_loader *l)
{
	pthread_mutex_lock(&l->mu);
	l->tail++;
	pthread_cond_signal(&l->emptied);
	pthread_mutex_unlock(&l->mu);
}

double
dt_loader_take_wait(struct dt_loader *l)
{
	double w = l->wait_s;

	l->wait_s = 0;
	return w;
}

void
dt_loader_free(struct dt_loader *l)
{
	if (l == NULL)
		return;
	pthread_mutex_lock(&l->mu);
	l->stop = 1;
	pthread_cond_broadcast(&l->emptied);
	pthread_mutex_unlock(&l->mu);
	if (l->started)
		pthread_join(l->thread, NULL);
	pthread_mutex_destroy(&l->mu);
	pthread_cond_destroy(&l->filled);
	pthread_cond_destroy(&l->emptied);
	for (int64_t i = 0; i < l->n_slots; i++) {
		free(l->slots[i].x);
		free(l->slots[i].y);
	}
	free(l->slots);
	free(l->perm);
	free(l);
}
