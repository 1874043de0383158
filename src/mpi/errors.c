#include "errors.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "state.h"

static int error_codes[NC_ERR_COUNT_];
static const char *const messages[] = {
#define NC_MESSAGE_OF(name, cls, msg) msg,
    NC_MPI_ERRORS(NC_MESSAGE_OF)
#undef NC_MESSAGE_OF
};
static int codes_carry_messages;
static pthread_once_t codes_once = PTHREAD_ONCE_INIT;

static void register_codes(void)
{
    static const int classes[] = {
#define NC_CLASS_OF(name, cls, msg) cls,
        NC_MPI_ERRORS(NC_CLASS_OF)
#undef NC_CLASS_OF
    };
    codes_carry_messages = 1;
    for (int e = 0; e < NC_ERR_COUNT_; e++) {
        int code, cls = -1, len = 0;
        char text[MPI_MAX_ERROR_STRING] = "";
        error_codes[e] = classes[e];
        if (PMPI_Add_error_code(classes[e], &code) != MPI_SUCCESS ||
            PMPI_Add_error_string(code, (char *)messages[e]) != MPI_SUCCESS)
            continue;
        PMPI_Error_class(code, &cls);
        PMPI_Error_string(code, text, &len);
        if (cls == classes[e] && strstr(text, messages[e])) error_codes[e] = code;
        else codes_carry_messages = 0;
    }
}

int nc_mpi_error(MPI_Comm comm, nc_mpi_error_id e)
{
    pthread_once(&codes_once, register_codes);
    if (!codes_carry_messages) fprintf(stderr, "%s\n", messages[e]);
    return nc_mpi_raise(comm, error_codes[e]);
}
