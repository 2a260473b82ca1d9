package trailgate.hadoop;

import org.apache.hadoop.fs.LocalFileSystem;

/** {@code fs.file.impl}: Hadoop's local filesystem (with .crc checksums) over
 * {@link NioLocalFileSystem}. */
public class NioChecksumFileSystem extends LocalFileSystem {
    public NioChecksumFileSystem() {
        super(new NioLocalFileSystem());
    }
}
