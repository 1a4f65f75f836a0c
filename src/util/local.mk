libdtrain_la_SOURCES += src/util/status.h src/util/error.c \
	src/util/alloc.h src/util/alloc.c src/util/rng.h src/util/rng.c \
	src/util/sysmem.h src/util/sysmem.c
