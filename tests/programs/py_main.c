/* CPython's own main program (Programs/python.c), for an interpreter built around
 * Debian's libpython3.11 of another architecture (libpython3.11:arm64 from the multiarch
 * archive): the interpreter is Debian's code unchanged, only this line is compiled here,
 * because python3.11:arm64's executable cannot be installed beside the host's. */
int Py_BytesMain(int argc, char **argv);

int main(int argc, char **argv)
{
    return Py_BytesMain(argc, argv);
}
