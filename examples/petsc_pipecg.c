/* Built by hand where PETSc is installed (Debian: petsc-dev), not by CMake:
 *   mpicc -O2 -o pipecg petsc_pipecg.c $(pkg-config --cflags --libs petsc)
 * docs/results-engine.md runs it with nodecoll preloaded and NODECOLL_STATS=1. */
/* 2-D Laplacian (5-point) solved with KSP; run with -ksp_type pipecg to exercise
 * MPI_Iallreduce overlapped with the matrix-vector product. */
#include <petscksp.h>

int main(int argc, char **argv)
{
    Mat A;
    Vec x, b, u;
    KSP ksp;
    PetscInt m = 200, n = 200, Istart, Iend, its;
    PetscReal norm;
    PetscCall(PetscInitialize(&argc, &argv, NULL, NULL));
    PetscCall(PetscOptionsGetInt(NULL, NULL, "-m", &m, NULL));
    n = m;
    PetscCall(MatCreate(PETSC_COMM_WORLD, &A));
    PetscCall(MatSetSizes(A, PETSC_DECIDE, PETSC_DECIDE, m * n, m * n));
    PetscCall(MatSetFromOptions(A));
    PetscCall(MatMPIAIJSetPreallocation(A, 5, NULL, 5, NULL));
    PetscCall(MatSeqAIJSetPreallocation(A, 5, NULL));
    PetscCall(MatGetOwnershipRange(A, &Istart, &Iend));
    for (PetscInt Ii = Istart; Ii < Iend; Ii++) {
        PetscInt i = Ii / n, j = Ii - i * n;
        if (i > 0) PetscCall(MatSetValue(A, Ii, Ii - n, -1.0, INSERT_VALUES));
        if (i < m - 1) PetscCall(MatSetValue(A, Ii, Ii + n, -1.0, INSERT_VALUES));
        if (j > 0) PetscCall(MatSetValue(A, Ii, Ii - 1, -1.0, INSERT_VALUES));
        if (j < n - 1) PetscCall(MatSetValue(A, Ii, Ii + 1, -1.0, INSERT_VALUES));
        PetscCall(MatSetValue(A, Ii, Ii, 4.0, INSERT_VALUES));
    }
    PetscCall(MatAssemblyBegin(A, MAT_FINAL_ASSEMBLY));
    PetscCall(MatAssemblyEnd(A, MAT_FINAL_ASSEMBLY));
    PetscCall(MatCreateVecs(A, &u, &b));
    PetscCall(VecDuplicate(u, &x));
    PetscCall(VecSet(u, 1.0));
    PetscCall(MatMult(A, u, b));
    PetscCall(KSPCreate(PETSC_COMM_WORLD, &ksp));
    PetscCall(KSPSetOperators(ksp, A, A));
    PetscCall(KSPSetTolerances(ksp, 1e-8, PETSC_DEFAULT, PETSC_DEFAULT, 2000));
    PetscCall(KSPSetFromOptions(ksp));
    PetscCall(KSPSolve(ksp, b, x));
    PetscCall(VecAXPY(x, -1.0, u));
    PetscCall(VecNorm(x, NORM_2, &norm));
    PetscCall(KSPGetIterationNumber(ksp, &its));
    PetscCall(PetscPrintf(PETSC_COMM_WORLD, "error norm %g, iterations %" PetscInt_FMT "\n", (double)norm, its));
    PetscCall(KSPDestroy(&ksp));
    PetscCall(VecDestroy(&u));
    PetscCall(VecDestroy(&x));
    PetscCall(VecDestroy(&b));
    PetscCall(MatDestroy(&A));
    PetscCall(PetscFinalize());
    return 0;
}
