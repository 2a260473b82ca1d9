package trailgate.hadoop;

import java.io.FileNotFoundException;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.attribute.PosixFileAttributes;
import java.nio.file.attribute.PosixFilePermission;
import java.util.EnumSet;
import java.util.Set;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.RawLocalFileSystem;
import org.apache.hadoop.fs.permission.FsPermission;

/**
 * Hadoop's raw local filesystem with permissions and file status through java.nio.
 *
 * <p>Without Hadoop's native library (it is not shipped with pyspark), RawLocalFileSystem
 * forks a shell command for each permission change ({@code chmod}) and each file status
 * ({@code stat}): every file Spark's streaming checkpoint writes (offset log, commit log and
 * their checksums) cost several forks of the JVM, 50-180 ms per micro-batch on a busy small
 * machine.  The JDK does the same work in-process.
 */
public class NioLocalFileSystem extends RawLocalFileSystem {
    /** Permission bits, lowest first, as in {@link FsPermission#toShort()}. */
    private static final PosixFilePermission[] BITS = {
        PosixFilePermission.OTHERS_EXECUTE, PosixFilePermission.OTHERS_WRITE,
        PosixFilePermission.OTHERS_READ, PosixFilePermission.GROUP_EXECUTE,
        PosixFilePermission.GROUP_WRITE, PosixFilePermission.GROUP_READ,
        PosixFilePermission.OWNER_EXECUTE, PosixFilePermission.OWNER_WRITE,
        PosixFilePermission.OWNER_READ};

    @Override
    public void setPermission(Path p, FsPermission permission) throws IOException {
        short mode = permission.toShort();
        Set<PosixFilePermission> set = EnumSet.noneOf(PosixFilePermission.class);
        for (int i = 0; i < BITS.length; i++) {
            if ((mode & (1 << i)) != 0) {
                set.add(BITS[i]);
            }
        }
        Files.setPosixFilePermissions(pathToFile(p).toPath(), set);
    }

    @Override
    public FileStatus getFileStatus(Path f) throws IOException {
        return status(f, true);
    }

    @Override
    public FileStatus getFileLinkStatus(Path f) throws IOException {
        return status(f, false);
    }

    private FileStatus status(Path f, boolean follow) throws IOException {
        java.nio.file.Path p = pathToFile(f).toPath();
        PosixFileAttributes a;
        try {
            a = follow ? Files.readAttributes(p, PosixFileAttributes.class)
                    : Files.readAttributes(p, PosixFileAttributes.class,
                            LinkOption.NOFOLLOW_LINKS);
        } catch (NoSuchFileException e) {
            throw new FileNotFoundException("File " + f + " does not exist");
        }
        int mode = 0;
        for (int i = 0; i < BITS.length; i++) {
            if (a.permissions().contains(BITS[i])) {
                mode |= 1 << i;
            }
        }
        Path link = a.isSymbolicLink() ? new Path(Files.readSymbolicLink(p).toString()) : null;
        return new FileStatus(a.size(), a.isDirectory(), 1, getDefaultBlockSize(f),
                a.lastModifiedTime().toMillis(), a.lastAccessTime().toMillis(),
                new FsPermission((short) mode), a.owner().getName(), a.group().getName(), link,
                f.makeQualified(getUri(), getWorkingDirectory()));
    }
}
