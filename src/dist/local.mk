libdtrain_la_SOURCES += src/dist/comm.h src/dist/comm.c src/dist/comm_self.c \
	src/dist/comm_mpi.c
libdtrain_la_CPPFLAGS += $(MPI_CFLAGS)
