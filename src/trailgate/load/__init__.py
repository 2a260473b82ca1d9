"""Initial load (a SOURCEISTABLE Extract): whole tables read in parallel on Spark at one
consistent cut, into a Replicat's targets or a trail, handing over exactly to CDC."""
