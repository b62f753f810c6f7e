// The stock Scala Spark Connect client, run by test_scala_client.py: one line per step,
// "label|OK|result" or "label|RAISED|exception class|condition|SQL state|message".
import org.apache.spark.SparkThrowable
import org.apache.spark.sql.connect.SparkSession

object ScalaProbe {
  def step(label: String)(body: => Any): Unit = {
    val line =
      try s"$label|OK|${body}"
      catch {
        case e: SparkThrowable with Throwable =>
          s"$label|RAISED|${e.getClass.getName}|${e.getCondition}|${e.getSqlState}|${e.getMessage}"
        case e: Throwable => s"$label|RAISED|${e.getClass.getName}|||${e.getMessage}"
      }
    println(line.replace("\n", " "))
  }

  def main(args: Array[String]): Unit = {
    val spark = SparkSession.builder().remote(args(0)).getOrCreate()
    def rows(sql: String): String = spark.sql(sql).collect().map(_.toString).mkString(",")
    step("parse_error")(rows("SELEC 1"))
    step("analysis_error")(rows("SELECT nope FROM range(3)"))
    step("cttas_head_syntax_error")(rows("CREATE TEMPORARY TABLE b (a INT AS SELECT 1"))
    step("cttas_analysis_error")(rows("CREATE TEMPORARY TABLE c AS SELECT nope FROM range(3)"))
    if (args.length > 1) {
      step("cttas")(rows("CREATE TEMPORARY TABLE t AS SELECT 1 AS x"))
      step("read_temp_table")(rows("SELECT * FROM t"))
      step("cttas_exists")(rows("CREATE TEMPORARY TABLE t AS SELECT 1 AS x"))
      step("scan_view")(
        rows(s"CREATE TEMPORARY VIEW sv USING scan OPTIONS (path '${args(1)}', format 'json')"))
      step("scan_collect")(rows("SELECT id, s FROM sv ORDER BY id"))
      step("scan_count")(rows("SELECT count(*) FROM sv"))
      step("setting_protected")(rows("SET spark.sql.sources.commitProtocolClass=x"))
      step("scan_path_not_found")(
        rows(s"CREATE TEMPORARY VIEW nv USING scan OPTIONS (path '${args(1)}/nope', format 'json')"))
      step("scan_bad_view")(
        rows(s"CREATE TEMPORARY VIEW bv USING scan OPTIONS " +
          s"(path '${args(2)}', format 'json', schema 'id INT')"))
      step("scan_bad_record")(rows("SELECT * FROM bv"))
    }
    spark.stop()
  }
}
