"""Database plumbing: the embedded cluster, connections and credential aliases, DBLOGIN."""
