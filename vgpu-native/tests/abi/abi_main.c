/* Runs the name checks; the type and prototype checks already passed by compiling. */
#include <stdio.h>

int abi_names_default(void);
int abi_names_per_thread(void);
int abi_types_checked(void);
int abi_prototypes_checked(void);

int main(void) {
    int failures = abi_names_default() + abi_names_per_thread();
    if (failures == 0 && abi_types_checked() && abi_prototypes_checked())
        fprintf(stderr, "  types, enumerators, fields, prototypes and names agree with cuda.h and cudaTypedefs.h\n");
    return failures == 0 ? 0 : 1;
}
