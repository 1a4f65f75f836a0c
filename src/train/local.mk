libdtrain_la_SOURCES += src/train/train.h src/train/train.c \
	src/train/rundir.h src/train/rundir.c \
	src/train/progress.h src/train/progress.c
