package trailgate.hadoop;

import java.io.IOException;
import java.net.URI;
import java.net.URISyntaxException;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.ChecksumFs;
import org.apache.hadoop.fs.DelegateToFileSystem;
import org.apache.hadoop.fs.FsConstants;

/** {@code fs.AbstractFileSystem.file.impl} (FileContext, which Spark's streaming checkpoint
 * uses): Hadoop's LocalFs, checksums included, over {@link NioLocalFileSystem}. */
public class NioLocalFs extends ChecksumFs {
    public NioLocalFs(URI uri, Configuration conf) throws IOException, URISyntaxException {
        super(new Raw(uri, conf));
    }

    /** As Hadoop's RawLocalFs, with the filesystem above. */
    static final class Raw extends DelegateToFileSystem {
        Raw(URI uri, Configuration conf) throws IOException, URISyntaxException {
            super(uri, new NioLocalFileSystem(), conf, FsConstants.LOCAL_FS_URI.getScheme(),
                    false);
        }

        @Override
        public int getUriDefaultPort() {
            return -1;
        }

        @Override
        public boolean isValidName(String src) {
            return true;  // local names may hold ':' and other characters HDFS refuses
        }
    }
}
