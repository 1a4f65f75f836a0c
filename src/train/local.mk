libdtrain_la_SOURCES += src/train/train.h src/train/train.c \
	src/train/state.h src/train/state.c \
	src/train/pipeline.h src/train/pipeline.c \
	src/train/source.h src/train/source.c \
	src/train/loader.h src/train/loader.c \
	src/train/signals.h src/train/signals.c \
	src/train/rundir.h src/train/rundir.c \
	src/train/progress.h src/train/progress.c
